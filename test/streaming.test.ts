import { QueryTypes } from 'sequelize';
import { resetConfig } from '../infra/config';
import { runEventsKey } from '../domain/streamEvents';
import { redis } from '../infra/redis';
import { db } from '../db/sequelize';
import { call, callsHeld, closeAll, providerRequests, releaseHeld, scriptModel, startApi, tenant, type Tenant, until } from './support/stack';
import { allFrames, frames, openStream, TERMINALS, type Frame } from './support/sse';

let api: { url: string; close(): Promise<void> };
beforeAll(async () => {
  process.env.SSE_KEEPALIVE_MS = '100';
  resetConfig();
  api = await startApi();
});
afterAll(async () => {
  await api.close();
  await closeAll();
});

const SCOPES = ['responses:create', 'agents:run', 'conversations:create', 'messages:create'];
const CHUNKS = ['Hel', 'lo, ', 'wor', 'ld.'];

const events = (fs: Frame[]) => fs.filter((f) => f.event).map((f) => f.event);

/**
 * Started, the reply's chunks as deltas, then completed. Chunks that come close together
 * join into one delta (activities/deltaWindow.ts), so how many deltas there are depends on when the
 * chunks arrived: the first goes at once, and all of them join to the reply.
 */
function expectStreamed(fs: Frame[], delta: string, chunks: string[]): void {
  const middle = fs.slice(1, -1);
  expect([fs[0].event, fs.at(-1)!.event]).toEqual(['response.started', 'response.completed']);
  expect(middle.map((f) => f.event)).toEqual(middle.map(() => delta));
  expect(middle[0].data.delta).toBe(chunks[0]);
  expect(middle.map((f) => f.data.delta).join('')).toBe(chunks.join(''));
}

async function endpoints(t: Tenant): Promise<[string, Record<string, unknown>][]> {
  const conv = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } });
  return [
    ['/api/v2/responses', { agent: t.agent }],
    [`/api/v2/agents/${t.agent}/runs`, {}],
    [`/api/v2/conversations/${conv.body.id}/messages`, {}],
  ];
}

describe('streaming', () => {
  it('streams started, the reply’s chunks as deltas, and exactly one terminal event, on all three endpoints', async () => {
    const t = await tenant({ scopes: SCOPES });
    for (const [path, extra] of await endpoints(t)) {
      await scriptModel(t.model, [{ chunks: CHUNKS }]);
      const res = await openStream(api.url, path, t.key, { ...extra, input: 'hi', stream: true });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(res.headers.get('x-stream-version')).toBe('2026-09-07');
      const fs = (await allFrames(res)).filter((f) => f.event);
      expectStreamed(fs, 'response.output_text.delta', CHUNKS);
      expect(fs.every((f) => f.id && /^\d+-\d+$/.test(f.id))).toBe(true);
      expect(fs[0].data).toMatchObject({ status: 'running', agent: t.agent, stream_version: '2026-09-07' });
      const completed = fs[fs.length - 1].data;
      expect(completed).toMatchObject({ id: fs[0].data.id, status: 'completed', output: [{ type: 'text', text: 'Hello, world.' }] });
      expect((await providerRequests(t.model)).at(-1)!.body.stream).toBe(true);
    }
  });

  it('announces the run once when its first model call is retried before anything streamed', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 502 }, { chunks: CHUNKS }]);
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true });
    const fs = (await allFrames(res)).filter((f) => f.event);
    expectStreamed(fs, 'response.output_text.delta', CHUNKS);
    expect(await providerRequests(t.model)).toHaveLength(2);
  });

  it('ends with response.failed carrying the error object when the provider fails after the stream began', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 500 }, { status: 500 }, { status: 500 }]);
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true });
    expect(res.status).toBe(200);
    const fs = (await allFrames(res)).filter((f) => f.event);
    expect(events(fs)).toEqual(['response.started', 'response.failed']);
    expect(fs[1].data).toEqual({ error: { code: 'provider_unavailable', message: expect.any(String), request_id: fs[0].data.request_id }, id: fs[0].data.id, status: 'failed', trace_id: fs[0].data.trace_id });
  });

  it('still ends with exactly one terminal event when the stream lost it', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ chunks: ['slow ', 'reply'], chunkDelayMs: 300 }]);
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true });
    const seen: Frame[] = [];
    for await (const frame of frames(res)) {
      seen.push(frame);
      // A Redis hiccup: the run's stream vanishes after it started, so its terminal event is never read.
      if (frame.event === 'response.started') await redis().del(runEventsKey(frame.data.id));
    }
    const terminals = seen.filter((f) => TERMINALS.includes(f.event!));
    expect(terminals).toHaveLength(1);
    expect(terminals[0]).toMatchObject({ event: 'response.completed', data: { status: 'completed', output: [{ type: 'text', text: 'slow reply' }] } });
  });

  it('sends keep-alive comments while the run is quiet', async () => {
    const t = await tenant({ scopes: SCOPES });
    // Held until two keep-alives have come (and the call has reached the provider, to be released):
    // the run stays quiet for as long as that takes.
    await scriptModel(t.model, [{ text: 'eventually', hold: true }]);
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true });
    const fs: Frame[] = [];
    for await (const frame of frames(res)) {
      fs.push(frame);
      if (frame.comment === 'keep-alive' && fs.filter((f) => f.comment === 'keep-alive').length === 2) {
        await callsHeld(t.model, 1, 'the call to be held');
        await releaseHeld(t.model);
      }
    }
    expect(fs.filter((f) => f.comment === 'keep-alive').length).toBeGreaterThanOrEqual(2);
    expect(events(fs).at(-1)).toBe('response.completed');
  });

  it('answers failures before the first event as ordinary JSON errors', async () => {
    const t = await tenant({ scopes: SCOPES });
    const broke = await tenant({ scopes: SCOPES, credits: 0 });
    const draft = await tenant({ scopes: SCOPES, agentStatus: 'draft' });
    const cases: [string | undefined, Record<string, unknown>, number, string][] = [
      [t.key, { agent: t.agent, input: 'hi', stream: true, temperature: 1 }, 400, 'invalid_request'],
      [undefined, { agent: t.agent, input: 'hi', stream: true }, 401, 'authentication_error'],
      [broke.key, { agent: broke.agent, input: 'hi', stream: true }, 402, 'usage_blocked'],
      [draft.key, { agent: draft.agent, input: 'hi', stream: true }, 409, 'agent_not_available'],
    ];
    for (const [key, body, status, code] of cases) {
      const res = await call(api.url, 'POST', '/api/v2/responses', { key, body });
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body.error.code).toBe(code);
    }
  });

  it('cancels the run when the client disconnects: provider request aborted, run cancelled, billed once for what was consumed', async () => {
    const t = await tenant({ scopes: SCOPES });
    // After its first chunk the reply pauses a minute: only the cancel can end it.
    await scriptModel(t.model, [{ chunks: ['one ', 'two ', 'three ', 'four ', 'five '], chunkDelayMs: 60_000 }]);
    const abort = new AbortController();
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }, {}, abort.signal);
    let runId = '';
    try {
      for await (const frame of frames(res)) {
        if (frame.event === 'response.started') runId = frame.data.id;
        if (frame.event === 'response.output_text.delta') abort.abort();
      }
    } catch (err) {
      expect((err as Error).name).toBe('AbortError');
    }
    const status = await until(async () => {
      const got = await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key });
      return got.body.status === 'cancelled' ? got.body : undefined;
    }, 'the run to be cancelled');
    expect(status.usage.total_tokens).toBeGreaterThan(0);
    await until(async () => ((await providerRequests(t.model))[0].aborted ? true : undefined), 'the provider request to be aborted');
    const lines = await db().query<{ credits: number }>('SELECT l.credits FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', { replacements: { id: runId }, type: QueryTypes.SELECT });
    expect(lines).toEqual([{ credits: status.usage.total_tokens }]);
  });

  it('resumes after Last-Event-ID on another API instance', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ chunks: ['a', 'b', 'c'], chunkDelayMs: 100 }]);
    const original = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }))).filter((f) => f.event);
    const other = await startApi();
    try {
      const resumed = await allFrames(await openStream(other.url, `/api/v2/runs/${original[0].data.id}/events`, t.key, undefined, { 'Last-Event-ID': original[1].id! }));
      const withIds = (fs: Frame[]) => fs.filter((f) => f.event).map((f) => [f.id, f.event]);
      expect(withIds(resumed)).toEqual(withIds(original).slice(2));
    } finally {
      await other.close();
    }
  });

  it('streams JSON chunks for structured output and ends with the validated json item', async () => {
    const t = await tenant({ scopes: SCOPES });
    const chunks = ['{"name": ', '"Ada", ', '"extra": 1}'];
    await scriptModel(t.model, [{ chunks }]);
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const fs = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true, response_format: { type: 'json_schema', schema } }))).filter((f) => f.event);
    expectStreamed(fs, 'response.output_json.delta', chunks);
    expect(fs.at(-1)!.data.output).toEqual([{ type: 'json', json: { name: 'Ada' } }]);
  });

  it('ends a structured stream with response.failed structured_output_failed after the one repair', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ chunks: ['{"nope": 1}'] }, { chunks: ['{"still": "no"}'] }]);
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const fs = await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true, response_format: { type: 'json_schema', schema } }));
    const deltas = fs.filter((f) => f.event === 'response.output_json.delta').map((f) => f.data.call);
    expect(deltas).toEqual([1, 2]);
    expect(fs.at(-1)).toMatchObject({ event: 'response.failed', data: { error: { code: 'structured_output_failed' }, status: 'failed' } });
  });

  it('replays a streamed request under the same Idempotency-Key as its stream, on every execution endpoint', async () => {
    const t = await tenant({ scopes: SCOPES });
    for (const [path, extra] of await endpoints(t)) {
      await scriptModel(t.model, [{ chunks: ['x', 'y'] }]);
      const key = `idem-${path}`;
      const body = { ...extra, input: 'once', stream: true };
      const first = (await allFrames(await openStream(api.url, path, t.key, body, { 'Idempotency-Key': key }))).filter((f) => f.event);
      const again = await openStream(api.url, path, t.key, body, { 'Idempotency-Key': key });
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      const replayed = (await allFrames(again)).filter((f) => f.event);
      expect(replayed.map((f) => [f.id, f.event])).toEqual(first.map((f) => [f.id, f.event]));
      expect(await providerRequests(t.model)).toHaveLength(1);
    }
  });
});
