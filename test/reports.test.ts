import { call, providerRequests, scriptModel, tenant, until, useApi, type Tenant } from './support/stack';

const api = useApi();
const SCOPES = ['reports:create', 'reports:read', 'logs:read'];
const SCHEMA = { type: 'object', properties: { total: { type: 'integer' } }, required: ['total'], additionalProperties: false };

const create = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) => call(api.url, 'POST', '/api/v2/reports', { key: t.key, body: { agent: t.agent, name: 'Totals', ...body }, headers });
const finished = (t: Tenant, id: string) =>
  until(async () => {
    const now = await call(api.url, 'GET', `/api/v2/reports/${id}`, { key: t.key });
    return now.body.status === 'completed' || now.body.status === 'failed' ? now.body : undefined;
  }, `report ${id} to finish`);

describe('POST /api/v2/reports', () => {
  it('accepts a json report, runs the agent with its schema and one repair, and keeps the answer as the result', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: '{"total":"three"}' }, { text: '{"total":3}' }]);
    const accepted = await create(t, { task: 'Count the orders.', inputs: { orders: ['a', 'b', 'c'] }, format: 'json', schema: SCHEMA, metadata: { team: 'ops' } });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('location')).toBe(`/api/v2/reports/${accepted.body.id}`);
    expect(accepted.body).toMatchObject({ object: 'report', name: 'Totals', agent: t.agent, format: 'json', status: 'queued', result: null, metadata: { team: 'ops' } });
    expect(accepted.body.id).toMatch(/^rpt_/);

    const done = await finished(t, accepted.body.id);
    expect(done).toMatchObject({ status: 'completed', result: { total: 3 }, error: null, run: accepted.body.run });
    const requests = await providerRequests(t.model);
    expect(requests).toHaveLength(2);
    const task = requests[0].body.messages.at(-1).content as string;
    expect(task).toContain('Count the orders.');
    expect(task).toContain('"orders"');
    expect(JSON.stringify(requests[1].body.messages)).toContain('did not match the required format');

    // Billed and logged like any run.
    const logs = await call(api.url, 'GET', '/api/v2/logs?limit=1', { key: t.key });
    expect(logs.body.data[0]).toMatchObject({ run: accepted.body.run, status: 'completed' });
  });

  it('keeps text and Markdown answers as text', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'plain words' }, { text: '# Heading\n\n- item' }]);
    const text = await finished(t, (await create(t, { task: 'Summarise.' })).body.id);
    expect(text).toMatchObject({ format: 'text', status: 'completed', result: 'plain words' });
    const markdown = await finished(t, (await create(t, { task: 'Summarise.', format: 'markdown' })).body.id);
    expect(markdown).toMatchObject({ format: 'markdown', status: 'completed', result: '# Heading\n\n- item' });
    expect((await providerRequests(t.model))[1].body.messages.at(-1).content).toContain('Markdown');
  });

  it('fails the report with the run\'s error when the run fails', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ status: 400 }]);
    const done = await finished(t, (await create(t, { task: 'Summarise.' })).body.id);
    expect(done).toMatchObject({ status: 'failed', result: null, error: { code: 'provider_unavailable' } });
  });

  it('refuses invalid input with a 400 that names the problem, before looking at the credential', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ task: 'x', format: 'json' }, 'schema is required when format is json.'],
      [{ task: 'x', format: 'text', schema: SCHEMA }, 'schema is only read when format is json.'],
      [{ task: 'x', format: 'pdf' }, 'format must be one of json, text, markdown'],
      [{ format: 'text' }, 'task is required'],
      [{ task: 'x', colour: 'red' }, 'unknown key: colour'],
    ];
    for (const [body, message] of cases) {
      const refused = await call(api.url, 'POST', '/api/v2/reports', { body: { agent: 'agt_x', name: 'n', ...body } });
      expect([refused.status, refused.body.error.message]).toEqual([400, message]);
    }
    const badSchema = await call(api.url, 'POST', '/api/v2/reports', { body: { agent: 'agt_x', name: 'n', task: 'x', format: 'json', schema: { type: 'object', properties: { a: { $ref: 'http://elsewhere/x' } } } } });
    expect(badSchema.status).toBe(400);
  });

  it('replays a request with the same Idempotency-Key, marked Idempotent-Replay', async () => {
    const t = await tenant({ scopes: SCOPES });
    const first = await create(t, { task: 'Once.' }, { 'Idempotency-Key': 'report-once' });
    const again = await create(t, { task: 'Once.' }, { 'Idempotency-Key': 'report-once' });
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(first.headers.get('idempotent-replay')).toBeNull();
    const conflict = await create(t, { task: 'Another.' }, { 'Idempotency-Key': 'report-once' });
    expect([conflict.status, conflict.body.error.code]).toEqual([409, 'idempotency_conflict']);
    await finished(t, first.body.id);
    expect(await providerRequests(t.model)).toHaveLength(1);
  });
});

describe('GET /api/v2/reports', () => {
  it('pages with cursor and next_cursor under reports:read; another workspace\'s report is the same 404 as a missing one', async () => {
    const t = await tenant({ scopes: SCOPES });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.unshift((await create(t, { task: `Report ${n}.` })).body.id);
    const page1 = await call(api.url, 'GET', '/api/v2/reports?limit=2', { key: t.key });
    expect(page1.body.data.map((r: { id: string }) => r.id)).toEqual(ids.slice(0, 2));
    const page2 = await call(api.url, 'GET', `/api/v2/reports?limit=2&cursor=${page1.body.next_cursor}`, { key: t.key });
    expect(page2.body.data.map((r: { id: string }) => r.id)).toEqual(ids.slice(2));
    expect(page2.body.next_cursor).toBeNull();

    const creator = await tenant({ scopes: ['reports:create'] });
    expect((await call(api.url, 'GET', '/api/v2/reports', { key: creator.key })).status).toBe(403);
    const stranger = await tenant({ scopes: SCOPES });
    const theirs = await call(api.url, 'GET', `/api/v2/reports/${ids[0]}`, { key: stranger.key });
    const missing = await call(api.url, 'GET', '/api/v2/reports/rpt_01gggggggggggggggggggggggg', { key: stranger.key });
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'report_not_found']);
    expect(theirs.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));
    for (const id of ids) await finished(t, id);
  });
});
