import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { dataConverter } from '../infra/payloadCodec';
import { uploadedDocument } from './support/documents';
import * as admin from '../admin/commands';
import { ITEMS_PER_EXECUTION, JOB_CONCURRENCY } from '../domain/jobs';
import { call, callsHeld, providerRequests, releaseHeld, scriptModel, tenant, until, useApi, type Tenant } from './support/stack';

const api = useApi();
const SCOPES = ['jobs:create', 'jobs:read', 'jobs:cancel', 'agents:run', 'documents:create', 'knowledge:write', 'knowledge:read', 'extractions:create', 'extractions:read', 'logs:read'];

// Each run in flight holds its maximum cost (about 90,000 credits for the default agent), 16 at a time.
// Listened to by a partner, so its runs write outbox events (their correlation is checked).
const jobTenant = () => tenant({ scopes: SCOPES, credits: 1_000_000_000, listened: true });
const create = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) => call(api.url, 'POST', '/api/v2/jobs', { key: t.key, body, headers });
const read = (t: Tenant, id: string, query = '') => call(api.url, 'GET', `/api/v2/jobs/${id}${query}`, { key: t.key });
const finished = (t: Tenant, id: string) =>
  until(async () => {
    const now = await read(t, id, '?items_limit=1000');
    return ['completed', 'failed', 'cancelled'].includes(now.body.status) ? now.body : undefined;
  }, `job ${id} to finish`);

describe('job types, end to end', () => {
  it('runs.batch runs each item as a run of the agent in params, with progress and per-item outcomes', async () => {
    const t = await jobTenant();
    const accepted = await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: [1, 2, 3, 4, 5].map((n) => ({ input: `question ${n}` })) });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ object: 'job', type: 'runs.batch', resource_type: 'run', status: 'queued', progress: { total: 5, queued: 5, done: 0 } });
    const done = await finished(t, accepted.body.id);
    expect(done).toMatchObject({ status: 'completed', progress: { total: 5, completed: 5, failed: 0, done: 5, percent: 100 } });
    expect(done.items.data.map((i: { resource: string }) => i.resource)).toEqual(expect.arrayContaining([expect.stringMatching(/^run_/)]));
    const logs = await call(api.url, 'GET', '/api/v2/logs?limit=10', { key: t.key });
    expect(logs.body.data.map((l: { run: string }) => l.run).sort()).toEqual(done.items.data.map((i: { resource: string }) => i.resource).sort());
    // Each run's webhook events name the job in their correlation.
    const events = await db().query<{ job: string }>(
      "SELECT DISTINCT e.envelope->'correlation'->>'job_id' AS job FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws",
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(events).toEqual([{ job: accepted.body.id }]);
  });

  it('knowledge.ingest ingests each document into the collection; an item that cannot start fails alone, and the job with it', async () => {
    const t = await jobTenant();
    const a = await uploadedDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.from('alpha'));
    const b = await uploadedDocument(api.url, t.key, 'b.txt', 'text/plain', Buffer.from('beta'));
    const done = await finished(t, (await create(t, { type: 'knowledge.ingest', params: { collection: 'batch' }, items: [a, 'doc_01gggggggggggggggggggggggg', b] })).body.id);
    expect(done.status).toBe('failed');
    expect(done.progress).toMatchObject({ completed: 2, failed: 1 });
    expect(done.items.data[1]).toMatchObject({ status: 'failed', resource: null, error: { code: 'document_not_found' } });
    const ingestions = await call(api.url, 'GET', '/api/v2/knowledge/ingestions?status=completed', { key: t.key });
    expect(ingestions.body.data.map((i: { id: string }) => i.id).sort()).toEqual([done.items.data[0].resource, done.items.data[2].resource].sort());
  });

  it('knowledge.ingest joins an ingestion of the same document and collection already in flight', async () => {
    const t = await jobTenant();
    // Large enough that the request's own ingestion is still running when the job's item starts.
    const text = Array.from({ length: 20_000 }, (_, n) => `Line ${n} of the manual, about the quorbel valve.`).join('\n');
    const document = await uploadedDocument(api.url, t.key, 'manual.txt', 'text/plain', Buffer.from(text));
    const direct = await call(api.url, 'POST', '/api/v2/knowledge/ingestions', { key: t.key, body: { document, collection: 'joined' } });
    const done = await finished(t, (await create(t, { type: 'knowledge.ingest', params: { collection: 'joined' }, items: [document] })).body.id);
    expect(done.status).toBe('completed');
    expect(done.items.data[0].status).toBe('completed');
    const ingestion = await call(api.url, 'GET', `/api/v2/knowledge/ingestions/${done.items.data[0].resource}`, { key: t.key });
    expect(ingestion.body.status).toBe('completed');
    // Joined when still in flight; otherwise a second ingestion that found the same bytes indexed.
    if (done.items.data[0].resource !== direct.body.id) expect(ingestion.body.reused).toBe(true);
  });

  it('extractions.batch extracts from each document with the schema in params', async () => {
    const t = await jobTenant();
    const a = await uploadedDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.from('Present: Ann.'));
    await scriptModel(t.model, [{ text: '{"names":["ann"]}' }]);
    const schema = { type: 'object', properties: { names: { type: 'array', items: { type: 'string' } } }, required: ['names'], additionalProperties: false };
    const done = await finished(t, (await create(t, { type: 'extractions.batch', params: { schema, agent: t.agent }, items: [a] })).body.id);
    expect(done).toMatchObject({ status: 'completed', resource_type: 'extraction' });
    const extraction = await call(api.url, 'GET', `/api/v2/extractions/${done.items.data[0].resource}`, { key: t.key });
    expect(extraction.body).toMatchObject({ status: 'completed', result: { names: ['ann'] } });
  });
});

describe('admin job watch', () => {
  it('draws the progress on stderr until the job ends, then prints its record', async () => {
    const t = await jobTenant();
    await scriptModel(t.model, Array.from({ length: 6 }, () => ({ text: 'ok', delayMs: 300 })));
    const accepted = await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: Array.from({ length: 6 }, (_, n) => ({ input: `q${n}` })) });
    const child = spawn(process.execPath, [path.join(__dirname, '../dist/admin/cli.js'), 'job', 'watch', '--job', accepted.body.id], { env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ id: accepted.body.id, status: 'completed', progress: { done: 6, percent: 100 } });
    expect(stderr).toContain('6/6 items');
  });
});

describe('cancelling a job', () => {
  it('stops items not yet started, cancels running runs (each billed once), and is idempotent, finished jobs included', async () => {
    const t = await jobTenant();
    await scriptModel(t.model, Array.from({ length: JOB_CONCURRENCY }, () => ({ text: 'slow', hold: true })));
    const accepted = await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: Array.from({ length: 40 }, (_, n) => ({ input: `q${n}` })) });
    // Cancelled once the first window of runs is mid-call: the provider holds their requests, so none finishes first.
    await callsHeld(t.model, JOB_CONCURRENCY, 'the first window of runs to reach the model');
    const first = await call(api.url, 'POST', `/api/v2/jobs/${accepted.body.id}/cancel`, { key: t.key });
    const second = await call(api.url, 'POST', `/api/v2/jobs/${accepted.body.id}/cancel`, { key: t.key });
    // The held calls end only by the cancel reaching their runs (the provider's client goes away).
    await until(async () => ((await providerRequests(t.model)).filter((r) => r.aborted).length >= JOB_CONCURRENCY ? true : undefined), 'the running runs to stop their calls');
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.cancel_requested).toBe(true);
    const done = await finished(t, accepted.body.id);
    expect(done.status).toBe('cancelled');
    expect(done.progress.running + done.progress.queued).toBe(0);
    const notStarted = done.items.data.filter((i: { resource: string | null }) => !i.resource);
    expect(notStarted.length).toBeGreaterThan(10);
    for (const item of notStarted) expect([item.status, item.error]).toEqual(['cancelled', null]);
    // Every run that started settled exactly once (one log entry each); those the cancellation reached as cancelled, and so are their items.
    const started = done.items.data.filter((i: { resource: string | null }) => i.resource);
    const logs = await call(api.url, 'GET', '/api/v2/logs?limit=100', { key: t.key });
    expect(logs.body.data.map((l: { run: string }) => l.run).sort()).toEqual(started.map((i: { resource: string }) => i.resource).sort());
    const runStatus = new Map(logs.body.data.map((l: { run: string; status: string }) => [l.run, l.status]));
    for (const item of started) expect(item.status).toBe(runStatus.get(item.resource));
    expect(started.some((i: { status: string }) => i.status === 'cancelled')).toBe(true);
    const after = await call(api.url, 'POST', `/api/v2/jobs/${accepted.body.id}/cancel`, { key: t.key });
    expect([after.status, after.body.status]).toEqual([200, 'cancelled']);

    const complete = await finished(t, (await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }] })).body.id);
    const late = await call(api.url, 'POST', `/api/v2/jobs/${complete.id}/cancel`, { key: t.key });
    expect([late.status, late.body.status]).toEqual([200, 'completed']);
  });
});

describe('GET /api/v2/jobs', () => {
  it('pages by offset with has_more and no cursor, filters by status (unknown is 400) and type; a job created meanwhile shifts the pages', async () => {
    const t = await jobTenant();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.unshift((await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }] })).body.id);
    const page1 = await call(api.url, 'GET', '/api/v2/jobs?limit=2&offset=0', { key: t.key });
    expect(page1.body).toMatchObject({ object: 'list', has_more: true });
    expect(page1.body).not.toHaveProperty('next_cursor');
    expect(page1.body.data.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 2));
    // A job created between two pages moves every row down one: the next page repeats a row.
    const newest = (await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }] })).body.id;
    const page2 = await call(api.url, 'GET', '/api/v2/jobs?limit=2&offset=2', { key: t.key });
    expect(page2.body.data.map((j: { id: string }) => j.id)).toEqual([ids[1], ids[2]]);
    expect(page2.body.has_more).toBe(false);
    for (const id of [...ids, newest]) await finished(t, id);
    expect((await call(api.url, 'GET', '/api/v2/jobs?status=completed&type=runs.batch', { key: t.key })).body.data).toHaveLength(4);
    expect((await call(api.url, 'GET', '/api/v2/jobs?type=knowledge.ingest', { key: t.key })).body.data).toEqual([]);
    const unknown = await call(api.url, 'GET', '/api/v2/jobs?status=done', { key: t.key });
    expect([unknown.status, unknown.body.error.message]).toEqual([400, 'status must be one of queued, running, completed, failed, cancelled.']);
    const deep = await call(api.url, 'GET', '/api/v2/jobs?offset=99999999999999999999', { key: t.key });
    expect([deep.status, deep.body.error.message]).toEqual([400, 'offset must be an integer from 0 to 100000.']);
    const stranger = await jobTenant();
    const theirs = await read(stranger, ids[0]);
    const missing = await read(stranger, 'job_01gggggggggggggggggggggggg');
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'job_not_found']);
    expect(theirs.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));
  });
});

describe('POST /api/v2/jobs input', () => {
  it('refuses bad input with a 400 naming the problem; an unknown type lists the allowed ones', async () => {
    const t = await jobTenant();
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'emails.send', items: [1] }, 'type must be one of runs.batch, knowledge.ingest, extractions.batch'],
      [{ type: 'runs.batch', items: [], params: { agent: t.agent } }, 'items must not be empty'],
      [{ type: 'runs.batch', items: [{ input: 'x' }] }, 'params.agent is required'],
      [{ type: 'runs.batch', items: [{ input: 'x' }, { input: '' }], params: { agent: t.agent } }, 'items[1]: input must be a non-empty string or an object'],
      [{ type: 'runs.batch', items: [{ input: 'x', stream: true }], params: { agent: t.agent } }, 'items[0]: stream is not available in a job; follow each run with GET /api/v2/runs/{id}/events.'],
      [{ type: 'knowledge.ingest', items: ['nope'], params: { collection: 'c' } }, 'items[0] must be a document id (doc_…).'],
      [{ type: 'knowledge.ingest', items: ['doc_01gggggggggggggggggggggggg'], params: { collection: 'c', colour: 'red' } }, 'params has an unknown key: colour'],
    ];
    for (const [body, message] of cases) {
      const refused = await create(t, body);
      expect([refused.status, refused.body.error.message]).toEqual([400, message]);
    }
    const differ = await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }], idempotency_key: 'a' }, { 'Idempotency-Key': 'b' });
    expect(differ.status).toBe(400);
    expect((await call(api.url, 'GET', '/api/v2/jobs', { key: t.key })).body.data).toEqual([]);
  });

  it('honours the Idempotency-Key header and the body idempotency_key alike, replaying with Idempotent-Replay', async () => {
    const t = await jobTenant();
    const body = { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }] };
    const first = await create(t, body, { 'Idempotency-Key': 'job-once' });
    const again = await create(t, body, { 'Idempotency-Key': 'job-once' });
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    const inBody = { ...body, idempotency_key: 'job-in-body' };
    const byBody = await create(t, inBody);
    const byBodyAgain = await create(t, inBody);
    expect(byBodyAgain.body.id).toBe(byBody.body.id);
    expect(byBodyAgain.headers.get('idempotent-replay')).toBe('true');
    for (const id of [first.body.id, byBody.body.id]) await finished(t, id);
  });
});

describe('a 1,000-item job', () => {
  it(`continues as new every ${ITEMS_PER_EXECUTION} items, so no execution's history passes 3,500 events`, async () => {
    const t = await jobTenant();
    const accepted = await create(t, { type: 'runs.batch', params: { agent: t.agent }, items: Array.from({ length: 1000 }, (_, n) => ({ input: `item ${n}` })) });
    const done = await until(
      async () => {
        await new Promise((r) => setTimeout(r, 500));
        const now = await read(t, accepted.body.id, '?items_limit=1');
        return ['completed', 'failed', 'cancelled'].includes(now.body.status) ? now.body : undefined;
      },
      'the 1,000-item job to finish',
      280,
    );
    expect(done).toMatchObject({ status: 'completed', progress: { completed: 1000 } });
    const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    try {
      const lengths: number[] = [];
      for await (const execution of client.workflow.list({ query: `WorkflowId = '${accepted.body.id}'` })) {
        const history = await client.workflow.getHandle(accepted.body.id, execution.runId).fetchHistory();
        lengths.push(history.events!.length);
      }
      // Five executions of 200 items, and a last one that finds none left and ends the job.
      expect(lengths.length).toBe(1000 / ITEMS_PER_EXECUTION + 1);
      expect(Math.max(...lengths)).toBeLessThan(3500);
    } finally {
      await client.connection.close();
    }
  }, 300_000);
});

describe('job scopes', () => {
  it('needs the scope of what its items do besides jobs:create: a key with jobs:create alone creates no job of any type', async () => {
    const t = await tenant({ scopes: ['jobs:create', 'jobs:read'] });
    const doc = 'doc_01h00000000000000000000000';
    for (const [type, scope, params, items] of [
      ['runs.batch', 'agents:run', { agent: t.agent }, [{ input: 'x' }]],
      ['knowledge.ingest', 'knowledge:write', { collection: 'handbook' }, [doc]],
      ['extractions.batch', 'extractions:create', { schema: { type: 'object', properties: { total: { type: 'number' } } } }, [doc]],
    ] as const) {
      const res = await create(t, { type, params, items });
      expect([res.status, res.body.error?.code, res.body.error?.message]).toEqual([403, 'permission_denied', expect.any(String)]);
      expect(res.body.error.message).toContain(scope);
    }
    expect((await call(api.url, 'GET', '/api/v2/jobs', { key: t.key })).body.data).toEqual([]);
  });

  it("a revoked key stops its job's unstarted items: they fail permission_denied and reach no model", async () => {
    const t = await jobTenant();
    const key = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: ['jobs:create', 'jobs:read', 'agents:run'].join(',') });
    const total = JOB_CONCURRENCY + 4;
    // The first window's runs are held at the provider until the key is revoked.
    await scriptModel(t.model, Array.from({ length: total }, () => ({ text: 'done', hold: true })));
    const accepted = await call(api.url, 'POST', '/api/v2/jobs', { key: key.key, body: { type: 'runs.batch', params: { agent: t.agent }, items: Array.from({ length: total }, (_, n) => ({ input: `q${n}` })) } });
    expect(accepted.status).toBe(202);
    await callsHeld(t.model, JOB_CONCURRENCY, 'the first window of runs to reach the model');
    await admin.revokeKey({ id: key.id });
    await releaseHeld(t.model);
    const done = await finished(t, accepted.body.id);
    expect(done.status).toBe('failed');
    const items = done.items.data as { status: string; error: { code: string } | null }[];
    expect(items.filter((i) => i.status === 'completed')).toHaveLength(JOB_CONCURRENCY);
    const stopped = items.filter((i) => i.status === 'failed');
    expect(stopped).toHaveLength(4);
    expect(stopped.every((i) => i.error?.code === 'permission_denied')).toBe(true);
    expect(await providerRequests(t.model)).toHaveLength(JOB_CONCURRENCY);
  });
});
