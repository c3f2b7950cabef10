import Koa from 'koa';
import { Connection, Client } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { forgetCredentials } from '../api/middleware/credentials';
import { errorEnvelope } from '../api/middleware/errorEnvelope';
import { requestContext } from '../api/middleware/requestContext';
import { db } from '../db/sequelize';
import { type Answer, call, providerRequests, tenant, until, useApi } from './support/stack';
import { DEFAULT_INSTRUCTIONS } from '../domain/agents';

const api = useApi();

const withoutIds = (a: Answer) => a.text.replace(/req_[0-9a-z]+/g, 'req_X');

describe('the vertical slice: POST /api/v2/responses', () => {
  it('runs the agent through Temporal and the openai provider, settles once and answers the run object', async () => {
    const t = await tenant();
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hello there', metadata: { order: 7 } } });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^run_[0-9a-z]{26}$/),
      status: 'completed',
      agent: t.agent,
      agent_version: 1,
      output: [{ type: 'text', text: 'stub reply' }],
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15, cached_tokens: 0 },
      metadata: { order: 7 },
      request_id: res.headers.get('x-request-id'),
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(res.body).not.toHaveProperty('conversation');

    const sent = await providerRequests(t.model);
    expect(sent).toHaveLength(1);
    expect(sent[0].body.messages).toEqual([{ role: 'system', content: DEFAULT_INSTRUCTIONS }, { role: 'user', content: 'hello there' }]);

    const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    try {
      // The answer comes at the run's settlement, its workflow's last task just after.
      const handle = client.workflow.getHandle(res.body.id);
      expect(await handle.result()).toEqual({ run: res.body });
      const description = await handle.describe();
      expect(description.type).toBe('agentRun');
      expect(description.taskQueue).toBe('agent-runs');
      expect(description.status.name).toBe('COMPLETED');
      expect(description.searchAttributes).toMatchObject({ WorkspaceId: [t.workspace], AgentId: [t.agent], Kind: ['response'] });
      expect(await description.memo).toEqual({ request_id: res.body.request_id, trace_id: res.body.trace_id, agent: t.agent, agent_version: 1, metadata: { order: 7 } });
      // An operator finds it by its workspace (the dev server caches the search attributes it is started with).
      const found = await until(async () => {
        for await (const w of client.workflow.list({ query: `WorkspaceId = '${t.workspace}' AND Kind = 'response'` })) return w.workflowId;
        return undefined;
      }, 'the run listed by its workspace');
      expect(found).toBe(res.body.id);
    } finally {
      await client.connection.close();
    }

    const lines = await db().query<{ credits: number; line: string }>(
      'SELECT l.credits, l.line FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id',
      { replacements: { id: res.body.id }, type: QueryTypes.SELECT },
    );
    expect(lines).toEqual([{ credits: 15, line: 'api' }]);
    const [ws] = await db().query<{ credits: number }>('SELECT credits FROM workspaces WHERE public_id = :id', { replacements: { id: t.workspace }, type: QueryTypes.SELECT });
    expect(ws.credits).toBe(1_000_000 - 15);
  });
});

describe('authentication and scopes', () => {
  const body = { agent: 'agt_x', input: 'hi' };

  it('answers 401 for a missing, malformed or unknown key', async () => {
    for (const key of [undefined, 'not-a-key', 'tgcc_unknownunknownunknown']) {
      const res = await call(api.url, 'POST', '/api/v2/responses', { key, body });
      expect(res.status).toBe(401);
      expect(res.body.error).toEqual({ code: 'authentication_error', message: expect.any(String), request_id: res.headers.get('x-request-id') });
    }
  });

  it('answers 401 for an expired key and for a revoked one', async () => {
    const t = await tenant();
    const expired = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create', expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect((await call(api.url, 'POST', '/api/v2/responses', { key: expired.key, body: { agent: t.agent, input: 'hi' } })).status).toBe(401);

    const live = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    expect((await call(api.url, 'POST', '/api/v2/responses', { key: live.key, body: { agent: t.agent, input: 'hi' } })).status).toBe(200);
    await admin.revokeKey({ id: live.id });
    forgetCredentials();
    const revoked = await call(api.url, 'POST', '/api/v2/responses', { key: live.key, body: { agent: t.agent, input: 'hi' } });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe('authentication_error');
  });

  it('answers 403 naming the scope, and no scope implies another', async () => {
    const t = await tenant({ scopes: ['agents:run', 'agents:read', 'agent:preview'] });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
    expect(res.body.error.message).toContain('responses:create');
  });
});

describe('tenant isolation', () => {
  it("answers another workspace's agent exactly as a missing one", async () => {
    const mine = await tenant();
    const theirs = await tenant();
    const foreign = await call(api.url, 'POST', '/api/v2/responses', { key: mine.key, body: { agent: theirs.agent, input: 'hi' } });
    const missing = await call(api.url, 'POST', '/api/v2/responses', { key: mine.key, body: { agent: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa', input: 'hi' } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('agent_not_found');
    expect(withoutIds(foreign)).toBe(withoutIds(missing));
    expect(await providerRequests(theirs.model)).toHaveLength(0);
  });
});

describe('keys', () => {
  it('stores only a hash of the key and records last use', async () => {
    const t = await tenant();
    const rows = await db().query<{ key_hash: string; key_hint: string; last_used_at: Date | null }>(
      `SELECT k.key_hash, k.key_hint, k.last_used_at FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE w.public_id = :ws`,
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(rows).toHaveLength(1);
    expect(t.key).toMatch(/^tgcc_[A-Za-z0-9_-]{43}$/);
    const [all] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE key_hash = :k OR key_hint = :k OR :k = ANY(scopes)', { replacements: { k: t.key }, type: QueryTypes.SELECT });
    expect(all.n).toBe(0);
    expect(rows[0].key_hint).toBe(t.key.slice(-4));

    await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    // Touched after the answer, not before it: waited for.
    const used = await until(async () => {
      const [row] = await db().query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE key_hash = :h', { replacements: { h: rows[0].key_hash }, type: QueryTypes.SELECT });
      return row.last_used_at ?? undefined;
    }, 'the key to be marked used');
    expect(used).toBeInstanceOf(Date);
  });

  it('refuses a scope outside the registry, and staff scopes, naming them', async () => {
    const t = await tenant();
    await expect(admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create,respones:create' })).rejects.toThrow('"respones:create"');
    await expect(admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'ops:read' })).rejects.toThrow('"ops:read"');
    await expect(admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'agents:*' })).rejects.toThrow('"agents:*"');
  });
});

describe('the error envelope', () => {
  it('answers malformed JSON with 400 invalid_request', async () => {
    const res = await call(api.url, 'POST', '/api/v2/responses', { raw: '{"agent": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'Request body is not valid JSON.', request_id: res.headers.get('x-request-id') } });
  });

  it('answers an unknown route in the envelope', async () => {
    const res = await call(api.url, 'GET', '/api/v2/nope');
    expect(res.status).toBe(501);
    expect(res.body.error).toMatchObject({ code: 'not_implemented', request_id: expect.stringMatching(/^req_/) });
  });

  it('answers an unexpected failure with 500 disclosing nothing but the request id', async () => {
    const app = new Koa();
    app.silent = true;
    app.use(requestContext).use(errorEnvelope).use(() => {
      throw new Error('secret: password=hunter2 at db.internal:5432');
    });
    const server = app.listen(0);
    try {
      const res = await call(`http://127.0.0.1:${(server.address() as { port: number }).port}`, 'GET', '/');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: { code: 'internal_error', message: 'Internal error.', request_id: res.headers.get('x-request-id') } });
      expect(res.text).not.toContain('hunter2');
    } finally {
      server.close();
    }
  });

  it('serves health and readiness', async () => {
    expect((await call(api.url, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await call(api.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ postgres: 'ok', redis: 'ok', temporal: 'ok' });
  });
});
