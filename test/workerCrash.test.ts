import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { QueryTypes } from 'sequelize';
import type { RunInput } from '../domain/runs';
import { db } from '../db/sequelize';
import { startRun } from '../workflowClients/agentRun.client';
import { startWorkers, type RunningWorkers } from '../workers/worker';
import { callsHeld, providerRequests, runInputFor, scriptModel, tenant, until, useApi } from './support/stack';
import { frames, openStream, TERMINALS, type Frame } from './support/sse';

const api = useApi();
const children: ChildProcess[] = [];
const replacements: RunningWorkers[] = [];
let client: Client;

// The child runs compiled, exactly as a deployed worker does; npm test builds dist/ before jest.
const CHILD = path.join(__dirname, '../dist/test/stack/childWorker.js');

beforeAll(async () => {
  if (!existsSync(CHILD)) throw new Error(`${CHILD} is missing: run npm run build first (npm test does)`);
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(replacements.map((r) => r.shutdown()));
  await client.connection.close();
});

/** A worker process polling only `queue`, so the test decides which worker runs the run. */
async function workerProcess(queue: string): Promise<ChildProcess> {
  const worker = fork(CHILD, [queue], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  children.push(worker);
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  return worker;
}

async function replacementWorker(queue: string): Promise<void> {
  replacements.push(await startWorkers([queue]));
}

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

async function settled(runId: string): Promise<{ status: string; lines: number; total: number }> {
  const [run] = await db().query<{ status: string; lines: number; total: number }>(
    `SELECT r.status, (SELECT count(*)::int FROM ledger_lines l WHERE l.run_id = r.id) AS lines, (r.usage->>'total_tokens')::int AS total
       FROM runs r WHERE r.public_id = :id`,
    { replacements: { id: runId }, type: QueryTypes.SELECT },
  );
  return run;
}

/** What a client that honours the reset marker shows: each call's text, dropped when a retried attempt resets it. */
function shownText(seen: Frame[]): string {
  const calls = new Map<number, string>();
  for (const f of seen) {
    if (f.event !== 'response.output_text.delta') continue;
    calls.set(f.data.call, (f.data.reset ? '' : calls.get(f.data.call) ?? '') + f.data.delta);
  }
  return [...calls.values()].join('');
}

/** Starts the run on a queue only `child` polls, and follows its events until the end; `onDelta` acts at the first delta. */
async function streamThrough(t: { key: string }, input: RunInput, queue: string, onFirstDelta: () => Promise<void>): Promise<Frame[]> {
  await startRun(client, input, { taskQueue: queue });
  await until(async () => (await db().query('SELECT 1 FROM runs WHERE public_id = :id', { replacements: { id: input.runId }, type: QueryTypes.SELECT }))[0], 'the run to begin');
  const seen: Frame[] = [];
  let acted = false;
  for await (const frame of frames(await openStream(api.url, `/api/v2/runs/${input.runId}/events`, t.key))) {
    if (!frame.event) continue;
    seen.push(frame);
    if (frame.event === 'response.output_text.delta' && !acted) {
      acted = true;
      await onFirstDelta();
    }
  }
  return seen;
}

describe('a worker killed mid-call (kill -9)', () => {
  it('goes on streaming on another worker: the retried call says reset, one terminal event, billed once with the dead attempt estimated', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    // The first attempt sends its first chunk, then nothing more for a minute: it can only end by the kill.
    await scriptModel(t.model, [{ chunks: ['one ', 'two ', 'three ', 'four ', 'five '], chunkDelayMs: 60_000 }, { chunks: ['fresh ', 'answer'] }]);
    const queue = `crash-stream-${Date.now()}`;
    const child = await workerProcess(queue);
    const input = await runInputFor(t, { options: { stream: true } });

    const seen = await streamThrough(t, input, queue, async () => {
      child.kill('SIGKILL');
      await replacementWorker(queue);
    });

    const terminals = seen.filter((f) => TERMINALS.includes(f.event!));
    expect(terminals).toHaveLength(1);
    expect(seen.at(-1)).toMatchObject({ event: 'response.completed', data: { status: 'completed', output: [{ type: 'text', text: 'fresh answer' }] } });
    const resets = seen.filter((f) => f.data?.reset === true);
    expect(resets).toHaveLength(1);
    expect(resets[0].data).toMatchObject({ call: 1, attempt: 2, delta: '' });
    expect(shownText(seen)).toBe('fresh answer');

    const run = await settled(input.runId);
    expect(run.status).toBe('completed');
    expect(run.lines).toBe(1);
    // The second attempt reported 15 tokens; the dead one's prompt and partial answer are estimated on top.
    expect(run.total).toBeGreaterThan(15);
    expect(await providerRequests(t.model)).toHaveLength(2);
  });

  it('completes a plain run on another worker, billed once', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    // Held, never released: the first attempt can only end by the kill.
    await scriptModel(t.model, [{ text: 'never delivered', hold: true }, { text: 'delivered' }]);
    const queue = `crash-plain-${Date.now()}`;
    const child = await workerProcess(queue);
    const input = await runInputFor(t);
    const handle = await startRun(client, input, { taskQueue: queue });
    await callsHeld(t.model, 1, 'the first call to reach the provider');
    child.kill('SIGKILL');
    await replacementWorker(queue);

    const outcome = await handle.result();
    expect(outcome.run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'delivered' }] });
    expect(await settled(input.runId)).toMatchObject({ status: 'completed', lines: 1 });
    expect(await providerRequests(t.model)).toHaveLength(2);
  });
});

describe('a worker stopped by SIGTERM mid-call (a deploy)', () => {
  it('finishes the call it has, cancels nothing, then exits', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    await scriptModel(t.model, [{ chunks: ['all ', 'of ', 'it ', 'arrives'], chunkDelayMs: 400 }]);
    const queue = `deploy-${Date.now()}`;
    const child = await workerProcess(queue);
    const input = await runInputFor(t, { options: { stream: true } });

    const seen = await streamThrough(t, input, queue, async () => {
      child.kill('SIGTERM');
      // The settlement after the call runs on whichever worker polls the queue next.
      await replacementWorker(queue);
    });

    expect(seen.filter((f) => TERMINALS.includes(f.event!))).toHaveLength(1);
    expect(seen.at(-1)).toMatchObject({ event: 'response.completed', data: { output: [{ type: 'text', text: 'all of it arrives' }] } });
    expect(seen.some((f) => f.data?.reset)).toBe(false);
    const requests = await providerRequests(t.model);
    expect(requests).toHaveLength(1);
    expect(requests[0].aborted).toBe(false);
    expect(await exited(child)).toBe(0);
    expect(await settled(input.runId)).toMatchObject({ status: 'completed', lines: 1 });
  });
});
