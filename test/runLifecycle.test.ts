import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { QueryTypes } from 'sequelize';
import { mintId, mintTraceId } from '../domain/ids';
import type { RunInput } from '../domain/runs';
import { MockActivityEnvironment } from '@temporalio/testing';
import { startRun, type StartedRun } from '../activities/runs';
import { startRun as startRunWorkflow } from '../workflowClients/agentRun.client';
import { db } from '../db/sequelize';
import { type Answer, call, callsHeld, providerRequests, releaseHeld, runInputFor, scriptModel, tenant, until, useApi } from './support/stack';

const api = useApi();

const SCOPES = ['agents:run'];
const withoutIds = (a: Answer) => a.text.replace(/req_[0-9a-z]+/g, 'req_X');
const run = (key: string, agent: string, body: Record<string, unknown>) => call(api.url, 'POST', `/api/v2/agents/${agent}/runs`, { key, body });

/** The id of the tenant's one run, once its first model call has reached the provider. */
async function inFirstCall(t: { agent: string; model: string }): Promise<string> {
  const id = await until(async () => {
    const [row] = await db().query<{ public_id: string }>(
      'SELECT r.public_id FROM runs r JOIN agents a ON a.id = r.agent_id WHERE a.public_id = :agent',
      { replacements: { agent: t.agent }, type: QueryTypes.SELECT },
    );
    return row?.public_id;
  }, 'the run to start');
  await until(async () => ((await providerRequests(t.model)).length ? true : undefined), 'the provider call');
  return id;
}

async function runStatus(id: string): Promise<string> {
  const [row] = await db().query<{ status: string }>('SELECT status FROM runs WHERE public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
  return row.status;
}

describe('run retrieval', () => {
  it('GET /api/v2/runs/{id} answers the run object as the run answered it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const res = await run(t.key, t.agent, { input: 'hi', metadata: { k: 'v' } });
    const got = await call(api.url, 'GET', `/api/v2/runs/${res.body.id}`, { key: t.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it("answers another workspace's run exactly as a missing one", async () => {
    const mine = await tenant({ scopes: SCOPES });
    const theirs = await tenant({ scopes: SCOPES });
    const foreign = (await run(theirs.key, theirs.agent, { input: 'hi' })).body.id;
    const missing = 'run_01gggggggggggggggggggggggg';
    for (const suffix of ['', '/cancel']) {
      const method = suffix ? 'POST' : 'GET';
      const a = await call(api.url, method, `/api/v2/runs/${foreign}${suffix}`, { key: mine.key });
      const b = await call(api.url, method, `/api/v2/runs/${missing}${suffix}`, { key: mine.key });
      expect(a.status).toBe(404);
      expect(a.body.error.code).toBe('run_not_found');
      expect(withoutIds(a)).toBe(withoutIds(b));
    }
    expect(await runStatus(foreign)).toBe('completed');
  });
});

describe('a queued run', () => {
  it('is visible as queued before any worker takes it up, and only to its workspace', async () => {
    const t = await tenant({ scopes: SCOPES });
    const other = await tenant({ scopes: SCOPES });
    const [ws] = await db().query<{ id: number }>('SELECT id FROM workspaces WHERE public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    const input: RunInput = {
      runId: mintId('run'), kind: 'agent_run', requestId: mintId('request'), traceId: mintTraceId(),
      workspace: { id: ws.id, publicId: t.workspace, tenantRef: null, partnerPublicId: null },
      agent: { id: 0, publicId: t.agent, version: 1, config: {} },
      input: 'hi', attachments: [], channel: '', metadata: { order: 9 }, requestContext: {},
      options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60000, responseFormat: { type: 'text' } },
      acceptedAt: Date.now(),
    };
    const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    // A task queue no worker polls: the run stays queued.
    const handle = await startRunWorkflow(client, input, { taskQueue: `nobody-${input.runId}` });
    try {
      const got = await call(api.url, 'GET', `/api/v2/runs/${input.runId}`, { key: t.key });
      expect(got.status).toBe(200);
      expect(got.body).toEqual({
        id: input.runId, status: 'queued', agent: t.agent, agent_version: 1, output: [],
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_tokens: 0 },
        metadata: { order: 9 }, request_id: input.requestId, trace_id: input.traceId,
      });
      const foreign = await call(api.url, 'GET', `/api/v2/runs/${input.runId}`, { key: other.key });
      const missing = await call(api.url, 'GET', '/api/v2/runs/run_01hhhhhhhhhhhhhhhhhhhhhhhh', { key: other.key });
      expect(foreign.status).toBe(404);
      expect(withoutIds(foreign).replace(input.runId, 'X')).toBe(withoutIds(missing).replace('run_01hhhhhhhhhhhhhhhhhhhhhhhh', 'X'));

      // A workflow that ends without ever being taken up (terminated here) is not queued any more.
      await handle.terminate('test over');
      expect((await call(api.url, 'GET', `/api/v2/runs/${input.runId}`, { key: t.key })).body.status).toBe('failed');
    } finally {
      await client.connection.close();
    }
  });
});

describe('cancellation', () => {
  it('cancels a running run: it settles once as cancelled, the provider request is aborted, and cancel is idempotent', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'too late', delayMs: 20_000 }]);
    const pending = run(t.key, t.agent, { input: 'slow' });
    const id = await inFirstCall(t);

    const cancelled = await call(api.url, 'POST', `/api/v2/runs/${id}/cancel`, { key: t.key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id, status: 'cancelled' });
    const original = await pending;
    expect(original.status).toBe(200);
    expect(original.body).toMatchObject({ id, status: 'cancelled' });

    await until(async () => ((await providerRequests(t.model))[0].aborted ? true : undefined), 'the provider request to be aborted');
    const again = await call(api.url, 'POST', `/api/v2/runs/${id}/cancel`, { key: t.key });
    expect(again.body.status).toBe('cancelled');
    const [lines] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
    expect(lines.n).toBe(1);
  });

  it('cancelling a finished run changes nothing', async () => {
    const t = await tenant({ scopes: SCOPES });
    const done = await run(t.key, t.agent, { input: 'hi' });
    const res = await call(api.url, 'POST', `/api/v2/runs/${done.body.id}/cancel`, { key: t.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(done.body);
  });
});

describe('provider failures and time limits', () => {
  it('retries a failing provider by the declared policy, then fails the run with 502 provider_unavailable', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 500 }, { status: 503 }, { status: 500 }, { text: 'never reached' }]);
    const res = await run(t.key, t.agent, { input: 'hi' });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: { code: 'provider_unavailable', message: expect.any(String), request_id: res.headers.get('x-request-id') },
      id: expect.stringMatching(/^run_/),
      status: 'failed',
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(await providerRequests(t.model)).toHaveLength(3);
    expect(await runStatus(res.body.id)).toBe('failed');
  });

  it('recovers when a retry succeeds', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 502 }, { text: 'second time lucky' }]);
    const res = await run(t.key, t.agent, { input: 'hi' });
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'text', text: 'second time lucky' }]);
  });

  it('does not retry a provider 4xx', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 400 }, { text: 'never reached' }]);
    const res = await run(t.key, t.agent, { input: 'hi' });
    expect(res.status).toBe(502);
    expect(await providerRequests(t.model)).toHaveLength(1);
  });

  it('bounds the run by timeout_ms', async () => {
    const t = await tenant({ scopes: SCOPES });
    // Never answered: only the deadline ends the call.
    await scriptModel(t.model, [{ text: 'slow', hold: true }]);
    const res = await run(t.key, t.agent, { input: 'hi', timeout_ms: 3000 });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('provider_unavailable');
    expect(res.body.error.message).toContain('timeout_ms');
    expect(await runStatus(res.body.id)).toBe('failed');
    // What a cut call consumed is billed (the cancel tests hold that): whether this one began before
    // its deadline at all depends on how loaded the machine is, so its bill is not asserted here.
    await releaseHeld(t.model);
  });
});

describe('a run whose first reply is final', () => {
  it("settles in its one activity: its history is the floor's (one activity, two workflow tasks, no local activity)", async () => {
    const t = await tenant({ scopes: SCOPES });
    const answer = await run(t.key, t.agent, { input: 'hello' });
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('completed');
    const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    try {
      // The answer comes at the run's settlement, its workflow's last task just after.
      const handle = client.workflow.getHandle(answer.body.id);
      await handle.result();
      const { events } = await handle.fetchHistory();
      const count = (attributes: string) => (events ?? []).filter((e) => (e as Record<string, unknown>)[attributes]).length;
      expect(count('activityTaskScheduledEventAttributes')).toBe(1);
      expect(count('workflowTaskCompletedEventAttributes')).toBe(2);
      expect(count('markerRecordedEventAttributes')).toBe(0);
    } finally {
      await client.connection.close();
    }
    expect(await runStatus(answer.body.id)).toBe('completed');
  });

  it('ends cancelled when cancelled while that call is in flight, even when the reply comes before the call hears of the cancel', async () => {
    const t = await tenant({ scopes: SCOPES });
    // Held until released just after the cancel: Temporal's cancel reaches the call only with a
    // heartbeat's answer (seconds apart), so the reply comes first. Cancelled through Temporal, not
    // the API, so no announcement aborts the call at once (an operator's cancel in the UI).
    await scriptModel(t.model, [{ text: 'quick', hold: true }]);
    const pending = run(t.key, t.agent, { input: 'quick' });
    const id = await inFirstCall(t);
    await callsHeld(t.model, 1, 'the call to be held');
    const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    try {
      await client.workflow.getHandle(id).cancel();
    } finally {
      await client.connection.close();
    }
    // Once the workflow has recorded the cancel (what the settlement gives way to), the reply comes.
    await until(async () => {
      const [row] = await db().query('SELECT 1 AS recorded FROM run_cancel_requests WHERE run_public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
      return row ? true : undefined;
    }, 'the cancel to be recorded');
    await releaseHeld(t.model);
    expect((await pending).body).toMatchObject({ id, status: 'cancelled' });
    expect(await runStatus(id)).toBe('cancelled');
    // The reply is released long before Temporal's cancel can reach the call (its first heartbeat goes
    // 5 s after the call was scheduled) on all but a badly stalled machine; either way the run ends as
    // the cancel asked. Whether the stub has seen the connection close yet is not a thing to assert on.
  });

  it('a retried first call whose earlier attempt settled the run answers with that settlement and calls no model', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'once' }, { text: 'twice' }]);
    const input = await runInputFor(t);
    const start = { run: input, memory: false, call: { deadline: { at: Date.now() + 60_000, timeoutMs: 60_000 }, format: { type: 'text' as const }, stream: false, call: 1, tools: [], toolChoice: 'auto' as const, toolTurns: [], knowledge: [] }, settle: { knowledge: [] } };
    const first = (await new MockActivityEnvironment().run(startRun, start)) as StartedRun;
    expect(first.settled?.run).toMatchObject({ id: input.runId, status: 'completed', output: [{ type: 'text', text: 'once' }] });
    // The worker died after settling, before Temporal heard of it: the call runs again.
    const retried = (await new MockActivityEnvironment({ attempt: 2 }).run(startRun, start)) as StartedRun;
    expect(retried.settled).toEqual(first.settled);
    expect(await providerRequests(t.model)).toHaveLength(1);
    expect(await runStatus(input.runId)).toBe('completed');
  });
});
