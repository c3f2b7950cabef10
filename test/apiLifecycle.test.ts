import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { hostname } from 'node:os';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { temporal } from '../infra/temporalClient';
import { answers, freePort } from '../workers/temporalDevServer';
import { call, callsHeld, releaseHeld, scriptModel, tenant, until, useApi } from './support/stack';
import { frames, openStream, TERMINALS, type Frame } from './support/sse';

const api = useApi();
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** The API as deployed (compiled, its own process), so a test can SIGTERM it or give it a broken dependency. */
async function apiProcess(env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '../dist/api/server.js')], {
    env: { ...process.env, PORT: String(port), SHUTDOWN_DELAY_MS: '1000', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  await until(async () => ((await answers(port)) ? true : undefined), 'the API process to listen');
  return { url: `http://127.0.0.1:${port}`, child };
}

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

describe('an API instance whose Redis is down', () => {
  it('stays ready (degraded), serves reads, and refuses execution with 503', async () => {
    const t = await tenant({ scopes: ['logs:read', 'responses:create'] });
    const { url } = await apiProcess({ REDIS_URL: 'redis://127.0.0.1:1' });
    const ready = await call(url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'degraded', checks: { postgres: 'ok', redis: 'unavailable', temporal: 'ok' } });
    expect((await call(url, 'GET', '/api/v2/logs', { key: t.key })).status).toBe(200);
    const run = await call(url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    expect(run.status).toBe(503);
    expect(run.body.error.code).toBe('service_unavailable');
  });
});

describe('an API instance stopped by SIGTERM mid-stream (a deploy)', () => {
  it('fails readiness first, ends the stream without cancelling the run, and the client resumes on another instance', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    const chunks = ['one ', 'two ', 'three ', 'four ', 'five ', 'six'];
    // The rest of the reply (15 s) outlasts the drain (6 s) by far, however late the process's timers
    // fire; the drain leaves a loaded machine seconds to see readiness fail before the listener closes.
    await scriptModel(t.model, [{ chunks, chunkDelayMs: 3000 }]);
    const doomed = await apiProcess({ SHUTDOWN_DELAY_MS: '6000' });

    const before: Frame[] = [];
    const stream = await openStream(doomed.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'count', stream: true });
    let readiness: number | undefined;
    for await (const frame of frames(stream)) {
      if (!frame.event) continue;
      before.push(frame);
      if (frame.event === 'response.output_text.delta' && readiness === undefined) {
        doomed.child.kill('SIGTERM');
        // Ready until the process has the signal; unready from then until its listener closes.
        readiness = await until(async () => ((await call(doomed.url, 'GET', '/readyz')).status === 503 ? 503 : undefined), 'readiness to fail');
      }
    }
    expect(readiness).toBe(503);
    // The stream ended without a terminal event: the run was handed over, not finished or cancelled.
    expect(before.filter((f) => TERMINALS.includes(f.event!))).toEqual([]);
    expect(await exited(doomed.child)).toBe(0);

    const runId = before[0].data.id;
    const after: Frame[] = [];
    for await (const frame of frames(await openStream(api.url, `/api/v2/runs/${runId}/events`, t.key, undefined, { 'Last-Event-ID': before.at(-1)!.id! }))) {
      if (frame.event) after.push(frame);
    }
    expect(after.filter((f) => TERMINALS.includes(f.event!)).map((f) => f.event)).toEqual(['response.completed']);
    const text = [...before, ...after].filter((f) => f.event === 'response.output_text.delta').map((f) => f.data.delta).join('');
    expect(text).toBe(chunks.join(''));
    const [run] = await db().query<{ status: string }>('SELECT status FROM runs WHERE public_id = :id', { replacements: { id: runId }, type: QueryTypes.SELECT });
    expect(run.status).toBe('completed');
  });
});

describe('an API process that hosts runs (RUNS_IN_API)', () => {
  /** Who took each workflow task and activity task of the run, from its history. */
  async function takers(runId: string): Promise<{ workflowTasks: string[]; activities: string[] }> {
    // The answer comes at the run's settlement, its workflow's last task just after.
    const handle = (await temporal()).workflow.getHandle(runId);
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    return {
      workflowTasks: events.flatMap((e) => (e.workflowTaskStartedEventAttributes ? [e.workflowTaskStartedEventAttributes.identity ?? ''] : [])),
      activities: events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.identity ?? ''] : [])),
    };
  }

  it('runs what it starts on its own worker: the first task comes in the start answer and the activity in that task\'s completion', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    const { url, child } = await apiProcess({ RUNS_IN_API: '1' });
    // The suite's worker polls agent-runs too: a task that went through matching could go to either.
    const hosted = `${child.pid}@${hostname()}`;
    for (let i = 0; i < 4; i++) {
      const run = await call(url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: `hello ${i}` } });
      expect(run.status).toBe(200);
      expect(run.body.status).toBe('completed');
      const took = await takers(run.body.id);
      expect(took.workflowTasks.length).toBeGreaterThan(0);
      expect(took.activities.length).toBeGreaterThan(0);
      expect(new Set([...took.workflowTasks, ...took.activities])).toEqual(new Set([hosted]));
    }
  });

  it('drains on SIGTERM: a run in flight on its worker finishes there and its request is answered', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    await scriptModel(t.model, [{ text: 'slow but sure', hold: true }]);
    // A long drain: readiness fails for its whole length, however late the test sees it.
    const { url, child } = await apiProcess({ RUNS_IN_API: '1', SHUTDOWN_DELAY_MS: '10000' });
    const answer = call(url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'take your time' } });
    await callsHeld(t.model, 1, 'the model call to start');
    child.kill('SIGTERM');
    // The call is answered only once the process is draining.
    await until(async () => ((await call(url, 'GET', '/readyz')).status === 503 ? true : undefined), 'readiness to fail');
    await releaseHeld(t.model);
    const run = await answer;
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'slow but sure' }] });
    expect((await takers(run.body.id)).activities).toEqual([`${child.pid}@${hostname()}`]);
    expect(await exited(child)).toBe(0);
  });
});
