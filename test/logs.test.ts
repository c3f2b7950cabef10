import { randomUUID } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { mintId } from '../domain/ids';
import { type Answer, call, providerRequests, scriptModel, tenant, type Tenant, useApi } from './support/stack';

const api = useApi();

const SCOPES = ['responses:create', 'logs:read'];
const logs = (key: string | undefined, query = ''): Promise<Answer> => call(api.url, 'GET', `/api/v2/logs${query}`, { key });
const respond = (t: Tenant, body: Record<string, unknown>): Promise<Answer> => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, ...body } });
const base64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** Follows `next` from the first page to the last, returning every page. */
async function allPages(key: string, limit: number): Promise<Answer[]> {
  const pages: Answer[] = [];
  let query = `?limit=${limit}`;
  for (;;) {
    const page = await logs(key, query);
    expect(page.status).toBe(200);
    pages.push(page);
    if (page.body.next === null) return pages;
    query = `?limit=${limit}&cursor=${encodeURIComponent(page.body.next)}`;
  }
}

/**
 * Log entries written straight into the tables, for paging volumes that would be slow to produce
 * through runs. Each log's public id reuses its run's ULID, so ids stay well-formed and unique.
 */
async function seedLogs(t: Tenant, count: number): Promise<string[]> {
  const runIds = Array.from({ length: count }, () => mintId('run'));
  await db().query(
    `WITH owner AS (
       SELECT w.id AS workspace_id, a.id AS agent_id FROM workspaces w JOIN agents a ON a.workspace_id = w.id WHERE w.public_id = :workspace
     ), seeded AS (
       INSERT INTO runs (public_id, workspace_id, agent_id, agent_version, kind, status, request_id, trace_id)
       SELECT u.public_id, owner.workspace_id, owner.agent_id, 1, 'response', 'completed', 'req_seed', md5(u.public_id)
         FROM owner, unnest(ARRAY[:runIds]::text[]) WITH ORDINALITY AS u(public_id, n)
        ORDER BY u.n
       RETURNING id, public_id, workspace_id
     )
     INSERT INTO run_logs (public_id, workspace_id, run_id, status, latency_ms, model, input_tokens, output_tokens, total_tokens, cached_tokens)
     SELECT 'log_' || substr(public_id, 5), workspace_id, id, 'completed', 1, 'seeded', 1, 1, 2, 0 FROM seeded ORDER BY id`,
    { replacements: { workspace: t.workspace, runIds }, type: QueryTypes.INSERT },
  );
  return runIds;
}

describe('GET /api/v2/logs', () => {
  it('lists metadata of each run, newest first, paged by `cursor` until `next` is null, without transcript content', async () => {
    const t = await tenant({ scopes: SCOPES });
    const sentMarker = `sent-${randomUUID()}`;
    const replyMarker = `reply-${randomUUID()}`;
    await scriptModel(t.model, [
      { text: `${replyMarker} one` },
      { text: `${replyMarker} two` },
      { text: `${replyMarker} three` },
      { text: `${replyMarker} not json` },
      { text: `${replyMarker} still not json` },
      { text: `${replyMarker} four`, usage: { prompt_tokens: 7, completion_tokens: 3, cached_tokens: 2 } },
    ]);
    const runs: Answer[] = [];
    runs.push(await respond(t, { input: `${sentMarker} 1` }));
    runs.push(await respond(t, { input: `${sentMarker} 2` }));
    runs.push(await respond(t, { input: { note: `${sentMarker} 3` } }));
    // Two non-JSON replies to a json_object request: one repair, then a failed run with an error code.
    runs.push(await respond(t, { input: `${sentMarker} 4`, response_format: 'json_object' }));
    runs.push(await respond(t, { input: `${sentMarker} 5` }));
    expect(runs.map((r) => r.status)).toEqual([200, 200, 200, 422, 200]);
    expect(runs[0].body.output[0].text).toContain(replyMarker);
    expect(JSON.stringify(await providerRequests(t.model))).toContain(sentMarker);

    const pages = await allPages(t.key, 2);
    expect(pages.map((p) => p.body.data.length)).toEqual([2, 2, 1]);
    for (const page of pages) {
      expect(Object.keys(page.body).sort()).toEqual(['data', 'next', 'object']);
      expect(page.body.object).toBe('list');
      expect(page.text).not.toContain(sentMarker);
      expect(page.text).not.toContain(replyMarker);
    }
    expect(pages[0].body.next).toMatch(/^[A-Za-z0-9_-]+$/);
    const entries = pages.flatMap((p) => p.body.data);
    const failedRunId = (await db().query<{ public_id: string }>(
      `SELECT r.public_id FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws AND r.status = 'failed'`,
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    ))[0].public_id;
    const runIds = [runs[0].body.id, runs[1].body.id, runs[2].body.id, failedRunId, runs[4].body.id];
    expect(entries.map((e) => e.run)).toEqual([...runIds].reverse());
    expect(new Set(entries.map((e) => e.id)).size).toBe(5);

    const [newest, failed] = entries;
    expect(newest).toEqual({
      id: expect.stringMatching(/^log_[0-9a-z]{26}$/),
      run: runs[4].body.id,
      agent: t.agent,
      status: 'completed',
      latency_ms: expect.any(Number),
      model: t.model,
      usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10, cached_tokens: 2 },
      tool_names: [],
      uncharged_credits: 0,
      refused: false,
      usage_estimated: false,
      history_omitted: 0,
      error_code: null,
      knowledge: [],
      created_at: expect.any(String),
    });
    expect(Number.isInteger(newest.latency_ms) && newest.latency_ms >= 0).toBe(true);
    expect(new Date(newest.created_at).toISOString()).toBe(newest.created_at);
    expect(failed).toMatchObject({ run: failedRunId, status: 'failed', error_code: 'structured_output_failed', usage: { input_tokens: 20, output_tokens: 10, total_tokens: 30, cached_tokens: 0 } });
    const times = entries.map((e) => Date.parse(e.created_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('answers 20 by default, clamps a larger limit to 100, and pages every entry exactly once', async () => {
    const t = await tenant({ scopes: SCOPES });
    const seeded = await seedLogs(t, 105);

    const first = await logs(t.key);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(20);

    const pages = await allPages(t.key, 500);
    expect(pages.map((p) => p.body.data.length)).toEqual([100, 5]);
    expect(pages.flatMap((p) => p.body.data.map((e: { run: string }) => e.run))).toEqual([...seeded].reverse());
  });

  it.each([
    ['zero', '0'],
    ['negative', '-1'],
    ['fractional', '1.5'],
    ['not a number', 'ten'],
    ['empty', ''],
    ['in exponent form', '1e2'],
  ])('refuses a %s limit with 400', async (_label, limit) => {
    const t = await tenant({ scopes: SCOPES });
    const res = await logs(t.key, `?limit=${encodeURIComponent(limit)}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.message).toContain('limit');
  });

  it('refuses a repeated limit and an unknown query parameter instead of ignoring them', async () => {
    const t = await tenant({ scopes: SCOPES });
    const repeated = await logs(t.key, '?limit=2&limit=3');
    expect(repeated.status).toBe(400);
    expect(repeated.body.error.message).toContain('limit');
    const unknown = await logs(t.key, '?status=failed');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('status');
  });

  it('refuses a garbled, edited or foreign cursor with 400', async () => {
    const t = await tenant({ scopes: SCOPES });
    await seedLogs(t, 3);
    const page = await logs(t.key, '?limit=1');
    const good: string = page.body.next;
    expect((await logs(t.key, `?cursor=${good}`)).status).toBe(200);

    const other = await tenant({ scopes: SCOPES });
    await seedLogs(other, 2);
    const foreign: string = (await logs(other.key, '?limit=1')).body.next;
    const edited = good.slice(0, -2) + (good.endsWith('A') ? 'B' : 'A') + good.slice(-1);
    const cursors = [
      'not a cursor',
      'garbage',
      `${good}=`,
      edited,
      base64url('{"id":5}'),
      base64url(`{"id":"${mintId('run')}"}`),
      base64url(`{"id":"${mintId('log')}"}`),
      base64url(`{"id":"${mintId('log')}","at":1}`),
      base64url(`["${mintId('log')}"]`),
      foreign,
    ];
    for (const cursor of cursors) {
      const res = await logs(t.key, `?cursor=${encodeURIComponent(cursor)}`);
      expect({ cursor, status: res.status, code: res.body?.error?.code }).toEqual({ cursor, status: 400, code: 'invalid_request' });
    }
  });

  it("never shows another workspace's entries", async () => {
    const mine = await tenant({ scopes: SCOPES });
    const theirs = await tenant({ scopes: SCOPES });
    const myRun = await respond(mine, { input: 'mine' });
    const theirRun = await respond(theirs, { input: 'theirs' });
    expect([myRun.status, theirRun.status]).toEqual([200, 200]);

    const myLogs = await logs(mine.key, '?limit=100');
    const theirLogs = await logs(theirs.key, '?limit=100');
    expect(myLogs.body.data.map((e: { run: string }) => e.run)).toEqual([myRun.body.id]);
    expect(theirLogs.body.data.map((e: { run: string }) => e.run)).toEqual([theirRun.body.id]);
    expect(myLogs.text).not.toContain(theirRun.body.id);
    expect(myLogs.text).not.toContain(theirs.agent);
  });

  it('answers 401 without a credential and 403 naming logs:read without the scope', async () => {
    expect((await logs(undefined)).status).toBe(401);
    const t = await tenant({ scopes: ['responses:create'] });
    const res = await logs(t.key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
    expect(res.body.error.message).toContain('logs:read');
  });
});
