import Redis from 'ioredis';
import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { RateLimiter, setRateLimiter, type Limits } from '../callers/rateLimiter';
import { setClock } from '../domain/clock';
import { db } from '../db/sequelize';
import { call, closeAll, providerRequests, startApi, tenant, type Answer, type Tenant } from './support/stack';

let api: { url: string; close(): Promise<void> };

beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  setRateLimiter();
  setClock();
  await api.close();
  await closeAll();
});

const WINDOW_MS = 60_000;
// A window of its own for this file, far from the real one; 45.5 s into it, so 14.5 s remain.
const WINDOW_START = (Math.floor(Date.now() / WINDOW_MS) + 10_000) * WINDOW_MS;
const AT = WINDOW_START + 45_500;

const roomy: Limits = { credential: 1000, tenant: 1000, tenant_endpoint: 1000, agent: 1000, principal: 1000 };

function limitTo(limits: Partial<Limits>): void {
  setRateLimiter(new RateLimiter({ limits: { ...roomy, ...limits }, windowSeconds: 60 }));
}

beforeEach(() => setClock(() => AT));
afterEach(() => {
  setRateLimiter();
  setClock();
});

const respond = (key: string, body: Record<string, unknown>) => call(api.url, 'POST', '/api/v2/responses', { key, body });

async function runsOf(workspace: string): Promise<number> {
  const [row] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws', {
    replacements: { ws: workspace },
    type: QueryTypes.SELECT,
  });
  return row.n;
}

function expectRateLimited(res: Answer, retryAfter: string): void {
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe(retryAfter);
  // No run had started, so the envelope carries no run id or status.
  expect(res.body).toEqual({ error: { code: 'rate_limited', message: expect.any(String), request_id: res.headers.get('x-request-id') } });
}

describe('rate limits per dimension', () => {
  it('credential: refuses at its limit with Retry-After to the end of the window, before any run', async () => {
    limitTo({ credential: 3 });
    const t = await tenant();
    for (let i = 0; i < 3; i++) expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    const refused = await respond(t.key, { agent: t.agent, input: 'hi' });
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('credential');
    expect(await providerRequests(t.model)).toHaveLength(3);
    expect(await runsOf(t.workspace)).toBe(3);

    setClock(() => WINDOW_START + 59_001);
    expectRateLimited(await respond(t.key, { agent: t.agent, input: 'hi' }), '1');

    const other = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    expect((await respond(other.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
  });

  it('tenant: every key of the workspace shares it; another workspace does not', async () => {
    limitTo({ tenant: 2 });
    const t = await tenant();
    const second = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    expect((await respond(second.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    const refused = await respond(second.key, { agent: t.agent, input: 'hi' });
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('tenant');
    const elsewhere = await tenant();
    expect((await respond(elsewhere.key, { agent: elsewhere.agent, input: 'hi' })).status).toBe(200);
  });

  it('tenant + endpoint: counts per endpoint, in the one limiter service MCP calls too', async () => {
    limitTo({ tenant_endpoint: 2 });
    const t = await tenant();
    const missing = 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa';
    expect((await respond(t.key, { agent: missing, input: 'hi' })).status).toBe(404);
    expect((await respond(t.key, { agent: missing, input: 'hi' })).status).toBe(404);
    const refused = await respond(t.key, { agent: missing, input: 'hi' });
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('tenant + endpoint');

    const limiter = new RateLimiter({ limits: { ...roomy, tenant_endpoint: 2 } });
    expect(await limiter.check({ credential: 'key_mcp', tenant: t.workspace, endpoint: 'responses' })).toEqual({
      allowed: false,
      dimension: 'tenant_endpoint',
      limit: 2,
      windowSeconds: 60,
      retryAfterSeconds: 15,
    });
    expect(await limiter.check({ credential: 'key_mcp', tenant: t.workspace, endpoint: 'agent_runs' })).toEqual({ allowed: true });
  });

  it("agent: counts per agent, within the caller's workspace only", async () => {
    limitTo({ agent: 2 });
    const t = await tenant();
    const outsider = await tenant();
    // Naming another workspace's agent spends the outsider's own allowance, not the owner's.
    expect((await respond(outsider.key, { agent: t.agent, input: 'hi' })).status).toBe(404);
    expect((await respond(outsider.key, { agent: t.agent, input: 'hi' })).status).toBe(404);
    expectRateLimited(await respond(outsider.key, { agent: t.agent, input: 'hi' }), '15');

    expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    const refused = await respond(t.key, { agent: t.agent, input: 'hi' });
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('agent');

    const other = await admin.createAgent({ workspace: t.workspace, name: 'other', status: 'active', config: { model: t.model } });
    expect((await respond(t.key, { agent: other.id, input: 'hi' })).status).toBe(200);
  });

  it('principal: counts per end user named by external_ref; a request naming none skips it', async () => {
    limitTo({ principal: 2 });
    const t = await tenant();
    const missing = 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa';
    const asUser = (ref?: string) => respond(t.key, { agent: missing, input: 'hi', ...(ref && { external_ref: ref }) });
    expect((await asUser('customer-1')).status).toBe(404);
    expect((await asUser('customer-1')).status).toBe(404);
    const refused = await asUser('customer-1');
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('principal');
    expect((await asUser('customer-2')).status).toBe(404);
    for (let i = 0; i < 3; i++) expect((await asUser()).status).toBe(404);
  });

  it('a refused request consumes nothing in the other dimensions', async () => {
    limitTo({ credential: 3, agent: 1 });
    const t: Tenant = await tenant();
    const named = (agent: string) => respond(t.key, { agent, input: 'hi' });
    expect((await named('agt_a')).status).toBe(404);
    // Refused by the agent dimension: had it counted against the credential, agt_c would be refused.
    expectRateLimited(await named('agt_a'), '15');
    expectRateLimited(await named('agt_a'), '15');
    expect((await named('agt_b')).status).toBe(404);
    expect((await named('agt_c')).status).toBe(404);
    const byCredential = await named('agt_d');
    expectRateLimited(byCredential, '15');
    expect(byCredential.body.error.message).toContain('credential');
  });
});

describe('every authenticated endpoint', () => {
  const logs = (key: string, query = '') => call(api.url, 'GET', `/api/v2/logs${query}`, { key });

  it('shares the credential window with execution requests: either kind spends it and both are refused', async () => {
    limitTo({ credential: 3 });
    const t = await tenant({ scopes: ['responses:create', 'logs:read'] });
    expect((await logs(t.key)).status).toBe(200);
    expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);
    expect((await logs(t.key)).status).toBe(200);

    const refusedGet = await logs(t.key);
    expectRateLimited(refusedGet, '15');
    expect(refusedGet.body.error.message).toContain('credential');
    expectRateLimited(await respond(t.key, { agent: t.agent, input: 'hi' }), '15');
    expect(await providerRequests(t.model)).toHaveLength(1);
    // The query is still checked before the credential is looked at, so before any limit.
    expect((await logs(t.key, '?bogus=1')).status).toBe(400);
  });

  it('shares the tenant window across keys and surfaces; 403 comes before 429 and is not counted', async () => {
    limitTo({ tenant: 2 });
    const t = await tenant({ scopes: ['responses:create'] });
    const reader = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'logs:read' });
    expect((await logs(t.key)).status).toBe(403);
    expect((await logs(reader.key)).status).toBe(200);
    expect((await respond(t.key, { agent: t.agent, input: 'hi' })).status).toBe(200);

    expect((await logs(t.key)).status).toBe(403);
    const refused = await logs(reader.key);
    expectRateLimited(refused, '15');
    expect(refused.body.error.message).toContain('tenant');
    expectRateLimited(await respond(t.key, { agent: t.agent, input: 'hi' }), '15');
    const elsewhere = await tenant({ scopes: ['logs:read'] });
    expect((await logs(elsewhere.key)).status).toBe(200);
  });

  it('counts each endpoint under its own name in the tenant + endpoint dimension', async () => {
    limitTo({ tenant_endpoint: 1 });
    const t = await tenant({ scopes: ['responses:create', 'logs:read', 'conversations:create', 'conversations:read', 'messages:read'] });
    const run = await respond(t.key, { agent: t.agent, input: 'hi' });
    expect(run.status).toBe(200);
    const conversation = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } });
    expect(conversation.status).toBe(201);
    const endpoints: [name: string, method: string, path: string, status: number][] = [
      ['logs', 'GET', '/api/v2/logs', 200],
      ['runs_read', 'GET', `/api/v2/runs/${run.body.id}`, 200],
      ['run_events', 'GET', `/api/v2/runs/${run.body.id}/events`, 200],
      ['runs_cancel', 'POST', `/api/v2/runs/${run.body.id}/cancel`, 200],
      ['conversations_read', 'GET', `/api/v2/conversations/${conversation.body.id}`, 200],
      ['messages_list', 'GET', `/api/v2/conversations/${conversation.body.id}/messages`, 200],
    ];
    const probe = new RateLimiter({ limits: { ...roomy, tenant_endpoint: 1 } });
    // Asked after the call only: an allowed check would count.
    const spent = (endpoint: string) => probe.check({ credential: 'key_probe', tenant: t.workspace, endpoint });
    expect(await spent('conversations_create')).toMatchObject({ allowed: false, dimension: 'tenant_endpoint' });
    expectRateLimited(await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } }), '15');
    for (const [name, method, path, status] of endpoints) {
      expect((await call(api.url, method, path, { key: t.key })).status).toBe(status);
      expect(await spent(name)).toMatchObject({ allowed: false, dimension: 'tenant_endpoint' });
      const refused = await call(api.url, method, path, { key: t.key });
      expectRateLimited(refused, '15');
      expect(refused.body.error.message).toContain('tenant + endpoint');
    }
  });

  it('a GET refused by one dimension consumes nothing in the others', async () => {
    limitTo({ credential: 3, tenant_endpoint: 1 });
    const t = await tenant({ scopes: ['responses:create', 'logs:read', 'conversations:read'] });
    expect((await logs(t.key)).status).toBe(200);
    // Refused by tenant + endpoint: had these counted against the credential, the run would be refused.
    expectRateLimited(await logs(t.key), '15');
    expectRateLimited(await logs(t.key), '15');
    expect((await respond(t.key, { agent: 'agt_a', input: 'hi' })).status).toBe(404);
    expect((await call(api.url, 'GET', '/api/v2/conversations/conv_01aaaaaaaaaaaaaaaaaaaaaaaa', { key: t.key })).status).toBe(404);
    const byCredential = await call(api.url, 'GET', '/api/v2/runs/run_01aaaaaaaaaaaaaaaaaaaaaaaa', { key: t.key });
    expectRateLimited(byCredential, '15');
    expect(byCredential.body.error.message).toContain('credential');
  });
});

describe('fixed windows', () => {
  it('lets at most two windows’ worth through across a boundary, even concurrently', async () => {
    limitTo({ credential: 5 });
    const t = await tenant();
    const burst = () => Promise.all(Array.from({ length: 20 }, () => respond(t.key, { agent: 'agt_x', input: 'hi' })));

    setClock(() => WINDOW_START + WINDOW_MS - 400);
    const before = await burst();
    setClock(() => WINDOW_START + WINDOW_MS + 100);
    const after = await burst();

    const passed = (answers: Answer[]) => answers.filter((a) => a.status === 404).length;
    expect(passed(before)).toBe(5);
    expect(passed(after)).toBe(5);
    expect(before.filter((a) => a.status === 429).every((a) => a.headers.get('retry-after') === '1')).toBe(true);
    expect(after.filter((a) => a.status === 429).every((a) => a.headers.get('retry-after') === '60')).toBe(true);
    expect([...before, ...after].every((a) => a.status === 404 || a.status === 429)).toBe(true);
  });
});

describe('when Redis is unavailable', () => {
  it('fails closed with 503 service_unavailable and runs nothing', async () => {
    const unreachable = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    setRateLimiter(new RateLimiter({ redis: () => unreachable }));
    try {
      const t = await tenant();
      const res = await respond(t.key, { agent: t.agent, input: 'hi' });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: { code: 'service_unavailable', message: expect.stringContaining('Rate limiting'), request_id: res.headers.get('x-request-id') } });
      expect(await providerRequests(t.model)).toHaveLength(0);
      expect(await runsOf(t.workspace)).toBe(0);
    } finally {
      unreachable.disconnect();
    }
  });

  it('serves reads uncounted, and fails closed on every endpoint that changes or starts anything', async () => {
    const unreachable = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    setRateLimiter(new RateLimiter({ redis: () => unreachable }));
    try {
      const t = await tenant({ scopes: ['logs:read', 'agents:run'] });
      expect((await call(api.url, 'GET', '/api/v2/logs', { key: t.key })).status).toBe(200);
      const cancel = await call(api.url, 'POST', '/api/v2/runs/run_01gggggggggggggggggggggggg/cancel', { key: t.key });
      expect(cancel.status).toBe(503);
      expect(cancel.body.error.code).toBe('service_unavailable');
    } finally {
      unreachable.disconnect();
    }
  });
});
