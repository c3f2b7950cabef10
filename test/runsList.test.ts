import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { db } from '../db/sequelize';
import { RUN_PAGE_SCAN } from '../db/runs';
import { call, scriptModel, tenant, useApi } from './support/stack';

/** GET /api/v2/runs: the runs that need attention, by status, agent, kind, time, queue wait and the reconciler's hand. */
const api = useApi();

const list = async (key: string, query = '') => {
  const res = await call(api.url, 'GET', `/api/v2/runs${query}`, { key });
  expect(res.status).toBe(200);
  return res.body as { data: { id: string; status: string; kind: string; agent: string; error_code: string | null; queued_ms: number; reconciled: boolean }[]; next_cursor: string | null };
};
const set = (runId: string, assignments: string) => db().query(`UPDATE runs SET ${assignments} WHERE public_id = :id`, { replacements: { id: runId }, type: QueryTypes.UPDATE });

describe('GET /api/v2/runs', () => {
  it('lists runs newest first as metadata only, filtered to those that need attention, and pages by cursor', async () => {
    const t = await tenant({ scopes: ['responses:create', 'agents:run'] });
    // One completes, one fails at the provider (a 400 is final), one is reconciled, one waited long in the queue.
    await scriptModel(t.model, [{ text: 'fine' }, { status: 400 }, { text: 'fine' }, { text: 'fine' }]);
    const ask = () => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    const [ok, failed, reconciled, slow] = [await ask(), await ask(), await ask(), await ask()];
    expect([ok.status, failed.status]).toEqual([200, 502]);
    await set(reconciled.body.id, 'reconciled_at = now()');
    await set(slow.body.id, "created_at = started_at - interval '10 minutes'");

    const all = await list(t.key);
    expect(all.data.map((r) => r.id)).toEqual([slow.body.id, reconciled.body.id, failed.body.id, ok.body.id]);
    expect(all.data[2]).toMatchObject({ status: 'failed', kind: 'response', agent: t.agent, error_code: 'provider_unavailable' });
    expect(JSON.stringify(all)).not.toContain('fine');
    expect((await list(t.key, '?status=failed,blocked')).data.map((r) => r.id)).toEqual([failed.body.id]);
    expect((await list(t.key, '?reconciled=true')).data.map((r) => r.id)).toEqual([reconciled.body.id]);
    const waited = await list(t.key, '?queued_longer_than_ms=60000');
    expect(waited.data.map((r) => r.id)).toEqual([slow.body.id]);
    expect(waited.data[0].queued_ms).toBeGreaterThanOrEqual(600_000);
    expect((await list(t.key, `?agent=${t.agent}&kind=agent_run`)).data).toEqual([]);
    expect((await list(t.key, `?created_after=${new Date(Date.now() + 60_000).toISOString()}`)).data).toEqual([]);

    const first = await list(t.key, '?limit=3');
    expect(first.data).toHaveLength(3);
    const rest = await list(t.key, `?limit=3&cursor=${first.next_cursor}`);
    expect(rest.data.map((r) => r.id)).toEqual([ok.body.id]);
    expect(rest.next_cursor).toBeNull();
  });

  it('lists only the kinds the credential may read, and refuses a bad filter with a 400 naming it', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    await scriptModel(t.model, [{ text: 'x' }]);
    await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    const agentsOnly = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'agents:run' });
    expect((await list(agentsOnly.key)).data).toEqual([]);
    expect((await list(t.key)).data).toHaveLength(1);
    for (const [query, named] of [['?status=lost', 'status'], ['?queued_longer_than_ms=-1', 'queued_longer_than_ms'], ['?created_after=yesterday', 'created_after'], ['?reconciled=maybe', 'reconciled'], ['?colour=red', 'colour']]) {
      const res = await call(api.url, 'GET', `/api/v2/runs${query}`, { key: t.key });
      expect([res.status, res.body.error.code]).toEqual([400, 'invalid_request']);
      expect(res.body.error.message).toContain(named);
    }
    const noScope = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'logs:read' });
    expect((await call(api.url, 'GET', '/api/v2/runs', { key: noScope.key })).status).toBe(403);
  });

  it('looks at a bounded number of runs per page: a filter that matches nothing in a long history answers a short page and a cursor to look further', async () => {
    const t = await tenant({ scopes: ['responses:create', 'agents:run'] });
    await scriptModel(t.model, [{ text: 'fine' }]);
    const ran = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    // A long history: the run, copied past one page's scan.
    await db().query(
      `INSERT INTO runs SELECT (json_populate_record(src, json_build_object('id', nextval('runs_id_seq'), 'public_id', 'run_' || substr(md5(src.public_id || g), 1, 26)))).*
         FROM runs src, generate_series(1, :n) g WHERE src.public_id = :id`,
      { replacements: { id: ran.body.id, n: RUN_PAGE_SCAN + 100 } },
    );
    // Nothing is reconciled: the first page looked at its bound of runs and says where to look on.
    const first = await list(t.key, '?reconciled=true');
    expect(first.data).toEqual([]);
    expect(first.next_cursor).not.toBeNull();
    const rest = await list(t.key, `?reconciled=true&cursor=${first.next_cursor}`);
    expect([rest.data, rest.next_cursor]).toEqual([[], null]);
    // What the indexes serve is found at once, however long the history: nothing before 1971.
    expect(await list(t.key, '?created_before=1971-01-01T00:00:00Z')).toEqual({ object: 'list', data: [], next_cursor: null });
    expect((await list(t.key, '?limit=2')).data).toHaveLength(2);
  });
});
