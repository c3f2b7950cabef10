import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { Client, Connection } from '@temporalio/client';
import { resetConfig } from '../infra/config';
import { dataConverter } from '../infra/payloadCodec';
import { startRun } from '../workflowClients/agentRun.client';
import { startWorkers, type RunningWorkers } from '../workers/worker';
import { call, closeAll, heldRequests, providerRequests, releaseHeld, runInputFor, scriptModel, startApi, tenant, until } from './support/stack';
import { frames, openStream } from './support/sse';

/**
 * What a process holds at once, tested without timing: stub replies held until enough calls have
 * arrived together (or until the test releases them), so a limit shows as calls that never arrive.
 */

const LIMIT = '1000000';
let api: { url: string; close(): Promise<void> };
let client: Client;
beforeAll(async () => {
  // Hundreds of runs from one key: the rate limits are not what these tests are about.
  Object.assign(process.env, { RATE_LIMIT_CREDENTIAL: LIMIT, RATE_LIMIT_TENANT: LIMIT, RATE_LIMIT_TENANT_ENDPOINT: LIMIT, RATE_LIMIT_AGENT: LIMIT, RATE_LIMIT_PRINCIPAL: LIMIT });
  resetConfig();
  api = await startApi();
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
});
afterAll(async () => {
  await api.close();
  await client.connection.close();
  await closeAll();
});

describe('in-flight capacity', () => {
  it('holds 300 model calls in flight at once: the provider answers none until all 300 have arrived', async () => {
    const t = await tenant({ credits: 100_000_000 });
    // Twice as many replies as calls: a call retried on a starved machine (its heartbeat late) takes one, and counts in place of the one it gave up.
    await scriptModel(t.model, Array.from({ length: 600 }, () => ({ text: 'together', together: 300 })));
    // The longest timeout_ms: no call is answered before the 300th arrives, however slowly a loaded machine starts them.
    const answers = await Promise.all(Array.from({ length: 300 }, () => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', timeout_ms: 120_000 } })));
    expect(answers.filter((a) => a.status === 200 && a.body.status === 'completed').length).toBe(300);
    // Each run's requests carry its trace id: all 300 runs' calls reached the provider.
    const requests = await providerRequests(t.model);
    expect(new Set(requests.map((r) => String(r.headers.traceparent).split('-')[1])).size).toBe(300);
  }, 240_000);

  it('a worker at its slot limit holds that many calls, leaves the rest queued in Temporal, and keeps every open run cached (none evicted)', async () => {
    process.env.WORKER_MAX_INFLIGHT_RUNS = '3';
    resetConfig();
    const queue = `inflight-${randomUUID()}`;
    let worker: RunningWorkers | undefined;
    try {
      worker = await startWorkers([queue]);
      const t = await tenant();
      await scriptModel(t.model, [...Array.from({ length: 3 }, () => ({ text: 'first', hold: true })), ...Array.from({ length: 3 }, () => ({ text: 'then' }))]);
      const handles = await Promise.all(Array.from({ length: 6 }, async () => startRun(client, await runInputFor(t), { taskQueue: queue })));
      const status = () => worker!.workers[0].getStatus();
      // Every run has had its first task (cached) and scheduled its call; three calls hold the three slots.
      await until(async () => (status().numCachedWorkflows === 6 && (await heldRequests(t.model)) === 3 ? true : undefined), 'six runs cached, three calls held');
      expect(status().numInFlightActivities).toBe(3);
      expect(await providerRequests(t.model)).toHaveLength(3);
      await releaseHeld(t.model);
      const outcomes = await Promise.all(handles.map((h) => h.result()));
      expect(outcomes.map((o) => o.run.status)).toEqual(Array(6).fill('completed'));
      expect(await providerRequests(t.model)).toHaveLength(6);
    } finally {
      delete process.env.WORKER_MAX_INFLIGHT_RUNS;
      resetConfig();
      await worker?.shutdown();
    }
  }, 120_000);

  it("relays many streams on the API's fixed reader connections: opening 40 more opens no Redis connection", async () => {
    const t = await tenant();
    const connects = jest.spyOn(Redis.prototype, 'connect');
    try {
      // The first stream starts the reader.
      await scriptModel(t.model, [{ text: 'first' }, ...Array.from({ length: 80 }, () => ({ chunks: ['to', 'gether'], together: 40 }))]);
      for await (const f of frames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }))) if (f.event === 'response.completed') break;
      const before = connects.mock.calls.length;
      const streams = await Promise.all(Array.from({ length: 40 }, () => openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true })));
      const texts = await Promise.all(
        streams.map(async (res) => {
          let text = '';
          for await (const f of frames(res)) {
            if (f.event === 'response.output_text.delta') text += f.data.delta;
            if (f.event === 'response.completed') return text;
          }
          return undefined;
        }),
      );
      expect(texts).toEqual(Array(40).fill('together'));
      expect(connects.mock.calls.length).toBe(before);
    } finally {
      connects.mockRestore();
    }
  }, 120_000);
});
