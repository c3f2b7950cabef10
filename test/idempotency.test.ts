import Koa from 'koa';
import Router from '@koa/router';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { CLAIM_TIMEOUT_MS, fingerprintOf, REPLAY_WINDOW_MS, scopeHashOf } from '../api/middleware/idempotency';
import { authorize } from '../api/middleware/auth';
import { errorEnvelope } from '../api/middleware/errorEnvelope';
import { idempotent } from '../api/middleware/idempotent';
import { jsonBody } from '../api/middleware/jsonBody';
import { requestContext } from '../api/middleware/requestContext';
import type { AppState } from '../api/middleware/state';
import { hashApiKey } from '../domain/apiKeys';
import { setClock } from '../domain/clock';
import { mintId } from '../domain/ids';
import { db } from '../db/sequelize';
import { temporal } from '../infra/temporalClient';
import { call, closeAll, providerRequests, releaseHeld, scriptModel, startApi, tenant, type Answer } from './support/stack';
import { notTheApi } from './stack/contractCheck';

let api: { url: string; close(): Promise<void> };

beforeAll(async () => {
  api = await startApi();
});
afterEach(() => setClock());
afterAll(async () => {
  await api.close();
  await closeAll();
});

const respond = (key: string, idempotencyKey: string, body: unknown) =>
  call(api.url, 'POST', '/api/v2/responses', { key, body, headers: { 'Idempotency-Key': idempotencyKey } });

const marker = (a: Answer) => a.headers.get('idempotency-replayed');

async function runsOf(workspace: string): Promise<number> {
  const [row] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws', {
    replacements: { ws: workspace },
    type: QueryTypes.SELECT,
  });
  return row.n;
}

async function recordsOf(key: string): Promise<{ state: string }[]> {
  return db().query<{ state: string }>('SELECT i.state FROM idempotency_keys i JOIN api_keys k ON k.id = i.api_key_id WHERE k.key_hash = :hash', {
    replacements: { hash: hashApiKey(key) },
    type: QueryTypes.SELECT,
  });
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((r) => setTimeout(r, 25));
}

describe('replay', () => {
  it('answers the same key and body with the stored response, byte for byte, status and headers included', async () => {
    const t = await tenant();
    const body = { agent: t.agent, input: 'hello', metadata: { order: 1 } };
    const first = await respond(t.key, 'order-1', body);
    const again = await respond(t.key, 'order-1', body);

    expect(first.status).toBe(200);
    expect(marker(first)).toBeNull();
    expect(again.status).toBe(200);
    expect(marker(again)).toBe('true');
    expect(again.headers.get('idempotent-replay')).toBeNull();
    expect(again.text).toBe(first.text);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    // The replay is a request of its own, while its body is the original's.
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await providerRequests(t.model)).toHaveLength(1);
    expect(await runsOf(t.workspace)).toBe(1);
  });

  it('replays a failure from after the claim too, with its status', async () => {
    const t = await tenant();
    const body = { agent: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa', input: 'hello' };
    const first = await respond(t.key, 'missing-agent', body);
    const again = await respond(t.key, 'missing-agent', body);
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('agent_not_found');
    expect(again.status).toBe(404);
    expect(again.text).toBe(first.text);
    expect(marker(again)).toBe('true');
  });

  it('refuses the same key with a different body: 409 idempotency_conflict, never a replay', async () => {
    const t = await tenant();
    await respond(t.key, 'order-2', { agent: t.agent, input: 'hello' });
    const different = await respond(t.key, 'order-2', { agent: t.agent, input: 'goodbye' });
    expect(different.status).toBe(409);
    expect(different.body.error.code).toBe('idempotency_conflict');
    expect(marker(different)).toBeNull();
    // The fingerprint is the raw bytes: the same JSON written differently is a different request.
    const respaced = await call(api.url, 'POST', '/api/v2/responses', {
      key: t.key,
      raw: JSON.stringify({ agent: t.agent, input: 'hello' }, null, 2),
      headers: { 'Idempotency-Key': 'order-2' },
    });
    expect(respaced.status).toBe(409);
    expect(await providerRequests(t.model)).toHaveLength(1);
  });

  it('keeps each credential’s keys apart', async () => {
    const t = await tenant();
    const other = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    const body = { agent: t.agent, input: 'hello' };
    const mine = await respond(t.key, 'shared-key', body);
    const theirs = await respond(other.key, 'shared-key', body);
    expect(theirs.status).toBe(200);
    expect(marker(theirs)).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(await providerRequests(t.model)).toHaveLength(2);
  });

  it('refuses a key longer than 255 characters with 400', async () => {
    const t = await tenant();
    const tooLong = await respond(t.key, 'k'.repeat(256), { agent: t.agent, input: 'hello' });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.code).toBe('invalid_request');
    expect(tooLong.body.error.message).toContain('Idempotency-Key');
    expect((await respond(t.key, 'k'.repeat(255), { agent: t.agent, input: 'hello' })).status).toBe(200);
    expect(await providerRequests(t.model)).toHaveLength(1);
  });
});

describe('concurrency', () => {
  it('executes 50 concurrent requests with one key once; the rest replay or are refused', async () => {
    const t = await tenant();
    // The one run stays in flight long enough for the burst to find it so even on a loaded machine
    // (the suite runs test files two at a time, some of them heavy). On a machine loaded enough to
    // miss the call's heartbeat, Temporal retries the call: the same run asks again, with the same answer.
    await scriptModel(t.model, [{ text: 'only once', delayMs: 6000 }, { text: 'only once' }, { text: 'only once' }]);
    const body = { agent: t.agent, input: 'hello' };
    const answers = await Promise.all(Array.from({ length: 50 }, () => respond(t.key, 'burst', body)));

    const originals = answers.filter((a) => a.status === 200 && marker(a) === null);
    expect(originals).toHaveLength(1);
    const [original] = originals;
    expect(original.body.output).toEqual([{ type: 'text', text: 'only once' }]);
    for (const a of answers) {
      if (a === original) continue;
      if (a.status === 200) {
        expect(marker(a)).toBe('true');
        expect(a.text).toBe(original.text);
      } else {
        // Only a request that came before the first one stored its recovery point (a few milliseconds): how
        // many did depends on the machine, so the count is not asserted, only that each is this refusal.
        expect(a.status).toBe(409);
        expect(a.body.error.code).toBe('idempotency_conflict');
      }
    }
    // Every call the provider saw is the one run's (its trace): the burst executed nothing else.
    const calls = await providerRequests(t.model);
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(new Set(calls.map((c) => String(c.headers.traceparent).split('-')[1]))).toEqual(new Set([original.body.trace_id]));
    expect(await runsOf(t.workspace)).toBe(1);
  });
});

describe('a run Temporal no longer keeps', () => {
  it('is answered from its record on a replay, and nothing is held or started again', async () => {
    const t = await tenant();
    const body = { agent: t.agent, input: 'hello', stream: true };
    const first = await respond(t.key, 'gone', body);
    expect(first.status).toBe(200);
    const runId = /"id":"(run_[0-9a-z]+)"/.exec(first.text)![1];
    // As if the namespace's retention had passed.
    const client = await temporal();
    await client.workflowService.deleteWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: runId } });
    await until(async () => {
      try {
        await client.workflow.getHandle(runId).describe();
        return false;
      } catch {
        return true;
      }
    });
    const [before] = await db().query<{ credits: number }>('SELECT credits FROM workspaces WHERE public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    const replay = await respond(t.key, 'gone', body);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: runId, status: 'completed' });
    const [after] = await db().query<{ credits: number; held: number }>(
      'SELECT w.credits, (SELECT count(*)::int FROM credit_reservations c WHERE c.workspace_id = w.id) AS held FROM workspaces w WHERE w.public_id = :ws',
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(after).toEqual({ credits: before.credits, held: 0 });
    expect(await runsOf(t.workspace)).toBe(1);
  });
});

describe('time', () => {
  it('replays for 24 hours, then runs the request again', async () => {
    const t = await tenant();
    const body = { agent: t.agent, input: 'hello' };
    const start = Date.now();

    setClock(() => start - REPLAY_WINDOW_MS + 60_000);
    const recent = await respond(t.key, 'recent', body);
    setClock(() => start - REPLAY_WINDOW_MS - 1_000);
    const old = await respond(t.key, 'old', body);
    setClock();

    const replayed = await respond(t.key, 'recent', body);
    expect(marker(replayed)).toBe('true');
    expect(replayed.text).toBe(recent.text);
    const rerun = await respond(t.key, 'old', body);
    expect(rerun.status).toBe(200);
    expect(marker(rerun)).toBeNull();
    expect(rerun.body.id).not.toBe(old.body.id);
    expect(await providerRequests(t.model)).toHaveLength(3);
  });

  it('attaches a retry to the run its request began, while it runs and after 15 minutes: one run, one bill', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'slow', delayMs: 2000 }, { text: 'a second run' }]);
    const body = { agent: t.agent, input: 'hello' };
    const start = Date.now();

    setClock(() => start - CLAIM_TIMEOUT_MS - 1_000);
    const first = respond(t.key, 'stuck', body);
    await until(async () => (await providerRequests(t.model)).length === 1);
    // Past the 15 minutes an unfinished claim is released after, but this one began a run: the retry attaches.
    setClock();
    const retry = await respond(t.key, 'stuck', body);
    expect(retry.status).toBe(200);
    expect(marker(retry)).toBe('true');
    const original = await first;
    expect(marker(original)).toBeNull();
    expect(retry.text).toBe(original.text);
    expect(retry.body.output).toEqual([{ type: 'text', text: 'slow' }]);
    expect(await providerRequests(t.model)).toHaveLength(1);
    expect(await runsOf(t.workspace)).toBe(1);
  });

  it('answers a retry from the run when the first attempt’s connection dropped after the start', async () => {
    const t = await tenant();
    // Held until the caller has gone: its connection drops before any answer could come.
    await scriptModel(t.model, [{ text: 'finished without its caller', hold: true }]);
    const body = { agent: t.agent, input: 'hello' };
    const dropped = new AbortController();
    const first = fetch(`${api.url}/api/v2/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'Idempotency-Key': 'dropped' },
      body: JSON.stringify(body),
      signal: dropped.signal,
    }).catch((err: unknown) => err);
    await until(async () => (await providerRequests(t.model)).length === 1);
    dropped.abort();
    expect(await first).toMatchObject({ name: 'AbortError' });
    await releaseHeld(t.model);

    const retry = await respond(t.key, 'dropped', body);
    expect(retry.status).toBe(200);
    expect(retry.body.output).toEqual([{ type: 'text', text: 'finished without its caller' }]);
    expect(await providerRequests(t.model)).toHaveLength(1);
    const [bill] = await db().query<{ lines: number }>(
      'SELECT count(*)::int AS lines FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id',
      { replacements: { id: retry.body.id }, type: QueryTypes.SELECT },
    );
    expect(bill.lines).toBe(1);
  });

  it('starts the run under its recorded id when the first attempt recorded it but never reached Temporal', async () => {
    const t = await tenant();
    const body = { agent: t.agent, input: 'hello' };
    const runId = mintId('run');
    const [key] = await db().query<{ id: number; public_id: string }>('SELECT id, public_id FROM api_keys WHERE key_hash = :hash', {
      replacements: { hash: hashApiKey(t.key) },
      type: QueryTypes.SELECT,
    });
    // What an API that died between its recovery point and the start (or whose start timed out) leaves behind.
    await db().query(
      `INSERT INTO idempotency_keys (scope_hash, endpoint, api_key_id, fingerprint, state, claim_token, run_public_id, created_at, expires_at)
       VALUES (:scope, 'responses', :key, :fingerprint, 'in_flight', gen_random_uuid(), :runId, now(), now() + interval '1 day')`,
      {
        replacements: {
          scope: scopeHashOf({ endpoint: 'responses', environment: 'live', apiKeyKey: key.id, memberKey: null, apiKeyId: key.public_id, key: 'ambiguous' }),
          key: key.id,
          fingerprint: fingerprintOf('POST', '/api/v2/responses', Buffer.from(JSON.stringify(body))),
          runId,
        },
      },
    );
    const retry = await respond(t.key, 'ambiguous', body);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ id: runId, status: 'completed' });
    expect(await runsOf(t.workspace)).toBe(1);
    expect(await recordsOf(t.key)).toEqual([{ state: 'completed' }]);
  });

  it('purges expired records as later claims arrive', async () => {
    const t = await tenant();
    const body = { agent: t.agent, input: 'hello' };
    const start = Date.now();
    setClock(() => start - REPLAY_WINDOW_MS - 60 * 60_000);
    await respond(t.key, 'to-purge', body);
    expect(await recordsOf(t.key)).toEqual([{ state: 'completed' }]);

    // Minutes ahead, so the purge that this claim triggers runs whatever the last one was.
    setClock(() => start + 2 * 60_000);
    const other = await tenant();
    await respond(other.key, 'trigger', { agent: other.agent, input: 'hello' });
    expect(await recordsOf(t.key)).toEqual([]);
  });
});

describe('declared on other endpoints', () => {
  let server: Server;
  let url: string;
  const executions = { jobs: 0, reports: 0, slow: 0 };
  let letFirstSlowFinish: () => void;
  const firstSlowMayFinish = new Promise<void>((resolve) => (letFirstSlowFinish = resolve));
  let failNext = false;

  beforeAll(async () => {
    const app = new Koa<AppState>();
    app.silent = true;
    const router = new Router<AppState>();
    router.post('/api/v2/jobs', authorize({ scopes: ['jobs:create'], endpoint: 'jobs' }), idempotent('Idempotent-Replay'), (ctx) => {
      if (failNext) {
        failNext = false;
        throw new Error('boom');
      }
      executions.jobs += 1;
      ctx.status = 202;
      ctx.set('Location', `/api/v2/jobs/job_${executions.jobs}`);
      ctx.body = { id: `job_${executions.jobs}`, status: 'queued' };
    });
    router.post('/api/v2/slow', authorize({ scopes: ['jobs:create'], endpoint: 'slow' }), idempotent('Idempotent-Replay'), async (ctx) => {
      const n = ++executions.slow;
      if (n === 1) await firstSlowMayFinish;
      ctx.body = { n };
    });
    router.post('/api/v2/reports', authorize({ scopes: ['reports:create'], endpoint: 'reports' }), idempotent('Idempotent-Replay'), (ctx) => {
      executions.reports += 1;
      ctx.status = 201;
      ctx.body = { id: 'rpt_1' };
    });
    app.use(requestContext).use(errorEnvelope).use(jsonBody).use(router.routes());
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Stand-in routes with the API's paths and shapes of their own: not held to the API's contract.
    notTheApi(url);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('marks replays Idempotent-Replay on jobs and reports, keeping the stored status and headers', async () => {
    const t = await tenant({ scopes: ['jobs:create', 'reports:create'] });
    const job = (key: string) => call(url, 'POST', '/api/v2/jobs', { key: t.key, body: { type: 'export' }, headers: { 'Idempotency-Key': key } });
    const first = await job('job-key');
    const again = await job('job-key');
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('location')).toBe('/api/v2/jobs/job_1');
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.headers.get('idempotency-replayed')).toBeNull();
    expect(first.headers.get('idempotent-replay')).toBeNull();
    expect(executions.jobs).toBe(1);

    // The same key on another endpoint is another key.
    const report = await call(url, 'POST', '/api/v2/reports', { key: t.key, body: { type: 'export' }, headers: { 'Idempotency-Key': 'job-key' } });
    expect(report.status).toBe(201);
    expect(report.headers.get('idempotent-replay')).toBeNull();
  });

  it('releases the key after an internal error, so a retry runs', async () => {
    const t = await tenant({ scopes: ['jobs:create'] });
    const job = () => call(url, 'POST', '/api/v2/jobs', { key: t.key, body: { type: 'retry' }, headers: { 'Idempotency-Key': 'flaky' } });
    failNext = true;
    const failed = await job();
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');
    const before = executions.jobs;
    const retried = await job();
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replay')).toBeNull();
    expect(executions.jobs).toBe(before + 1);
  });

  it('refuses a key whose request began nothing yet while it runs, and releases it after 15 minutes', async () => {
    const t = await tenant({ scopes: ['jobs:create'] });
    const slow = () => call(url, 'POST', '/api/v2/slow', { key: t.key, body: {}, headers: { 'Idempotency-Key': 'stuck' } });
    const start = Date.now();
    setClock(() => start - CLAIM_TIMEOUT_MS - 1_000);
    const first = slow();
    await until(async () => executions.slow === 1);
    setClock(() => start - CLAIM_TIMEOUT_MS + 1_000);
    const running = await slow();
    expect(running.status).toBe(409);
    expect(running.body.error.code).toBe('idempotency_conflict');
    expect(running.body.error.message).toContain('in progress');

    setClock();
    const takeover = await slow();
    expect(takeover.status).toBe(200);
    expect(takeover.body).toEqual({ n: 2 });
    // The original finishing late must not overwrite the record that now belongs to the takeover.
    letFirstSlowFinish();
    expect((await first).body).toEqual({ n: 1 });
    const replayed = await slow();
    expect(replayed.headers.get('idempotent-replay')).toBe('true');
    expect(replayed.text).toBe(takeover.text);
  });
});
