import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { answers, freePort } from '../workers/temporalDevServer';
import { call, scriptModel, tenant, until, useApi } from './support/stack';
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
    await scriptModel(t.model, [{ chunks, chunkDelayMs: 400 }]);
    const doomed = await apiProcess();

    const before: Frame[] = [];
    const stream = await openStream(doomed.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'count', stream: true });
    let readiness: number | undefined;
    for await (const frame of frames(stream)) {
      if (!frame.event) continue;
      before.push(frame);
      if (frame.event === 'response.output_text.delta' && readiness === undefined) {
        doomed.child.kill('SIGTERM');
        await new Promise((r) => setTimeout(r, 100));
        readiness = (await call(doomed.url, 'GET', '/readyz')).status;
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
