import { execFileSync } from 'node:child_process';
import path from 'node:path';
import * as admin from '../admin/commands';
import { sql } from '../db/sql';
import { call, tenant, useApi } from './support/stack';

const api = useApi();

describe('stateless responses keep to their own conversations', () => {
  it('never attach to a public conversation with the same external_ref, nor keep one from being created', async () => {
    const t = await tenant({ scopes: ['responses:create', 'conversations:create', 'messages:read'] });
    const first = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', external_ref: 'crm-7' } });
    expect(first.status).toBe(200);
    expect(first.body).not.toHaveProperty('conversation');

    const opened = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent, external_ref: 'crm-7' } });
    expect(opened.status).toBe(201);
    const again = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', external_ref: 'crm-7' } });
    expect(again.status).toBe(200);
    expect(again.body).not.toHaveProperty('conversation');
    const messages = await call(api.url, 'GET', `/api/v2/conversations/${opened.body.id}/messages`, { key: t.key });
    expect(messages.body.data).toEqual([]);
  });
});

describe('run retrieval by kind', () => {
  it('reads a run only with the scope that could have created it; otherwise it is the same 404 as a missing run', async () => {
    const t = await tenant({ scopes: ['agents:run'] });
    const responsesOnly = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    const agentRun = await call(api.url, 'POST', `/api/v2/agents/${t.agent}/runs`, { key: t.key, body: { input: 'hi' } });
    const response = await call(api.url, 'POST', '/api/v2/responses', { key: responsesOnly.key, body: { agent: t.agent, input: 'hi' } });
    expect([agentRun.status, response.status]).toEqual([200, 200]);

    const read = (key: string, id: string) => call(api.url, 'GET', `/api/v2/runs/${id}`, { key });
    expect((await read(t.key, agentRun.body.id)).status).toBe(200);
    expect((await read(responsesOnly.key, response.body.id)).status).toBe(200);
    const missing = await read(responsesOnly.key, 'run_01gggggggggggggggggggggggg');
    for (const [key, id] of [[responsesOnly.key, agentRun.body.id], [t.key, response.body.id]]) {
      const refused = await read(key, id);
      expect(refused.status).toBe(404);
      expect(refused.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));
      expect((await call(api.url, 'POST', `/api/v2/runs/${id}/cancel`, { key })).status).toBe(404);
    }
  });
});

describe('a database error while resolving a conversation', () => {
  it('is a 500 that is never stored for replay, not a 404 conversation_not_found', async () => {
    const t = await tenant({ scopes: ['messages:create'] });
    // The conversation's lookup fails in the database (validation now refuses the NUL that used to make it fail there).
    const id = 'conv_01jc0000000000000000000000';
    const realRows = sql.rows;
    const lookup = jest.spyOn(sql, 'rows').mockImplementation((s, values) =>
      s.text.includes('FROM conversations') && values[0] === id ? Promise.reject(new Error('connection terminated unexpectedly')) : realRows(s, values),
    );
    try {
      const post = () => call(api.url, 'POST', `/api/v2/conversations/${id}/messages`, { key: t.key, body: { input: 'hi' }, headers: { 'Idempotency-Key': 'db-error' } });
      const first = await post();
      expect(first.status).toBe(500);
      expect(first.body.error.code).toBe('internal_error');
      const retry = await post();
      expect(retry.status).toBe(500);
      expect(retry.headers.get('idempotency-replayed')).toBeNull();
      expect(lookup.mock.calls.filter(([, values]) => values[0] === id)).toHaveLength(2);
    } finally {
      lookup.mockRestore();
    }
  });
});

describe('admin scope list', () => {
  it('prints the whole registry of 47 names, ops: ones included', () => {
    const out = execFileSync(process.execPath, [path.join(__dirname, '../dist/admin/cli.js'), 'scope', 'list'], { encoding: 'utf8' });
    const { scopes } = JSON.parse(out) as { scopes: string[] };
    expect(scopes).toHaveLength(47);
    expect(new Set(scopes).size).toBe(47);
    expect(scopes).toEqual(expect.arrayContaining(['agents:run', 'responses:create', 'logs:read', 'mcp:connect', 'actions:approve', 'ops:read']));
  });
});
