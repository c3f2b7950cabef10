import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as admin from '../admin/commands';
import { resetOAuthProvider } from '../api/oauth/provider';
import { resetConfig } from '../infra/config';
import { connect, member, useOAuthFlow } from './support/oauthFlow';
import { call, inOneRateWindow, scriptModel, tenant, useApi, type Tenant } from './support/stack';

const api = useApi();
useOAuthFlow(api);

const MODERN = '2026-07-28';
const CAPABILITIES = { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } };
const ALL_TOOL_SCOPES = ['mcp:connect', 'agents:run', 'responses:create', 'agents:read', 'knowledge:read', 'documents:read', 'reports:create', 'reports:read', 'jobs:read', 'usage:read', 'messages:read'];

interface Posted {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** One raw POST /mcp: the transport table is about statuses and headers, so no client library in between. */
async function post(key: string | undefined, message: unknown, headers: Record<string, string> = {}): Promise<Posted> {
  const res = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key && { authorization: `Bearer ${key}` }), ...headers },
    body: typeof message === 'string' ? message : JSON.stringify(message),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

const request = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({ jsonrpc: '2.0', id, method, params });
const modern = (extra: Record<string, string> = {}) => ({ 'MCP-Protocol-Version': MODERN, ...extra });
const handshake = (version = '2025-06-18') => ({ 'MCP-Protocol-Version': version });

/** A tools/call in the given era (modern requests carry their capabilities and mirror the method and name). */
function callTool(key: string, name: string, args: Record<string, unknown>, era: 'modern' | 'handshake' = 'handshake') {
  if (era === 'modern') return post(key, request('tools/call', { name, arguments: args, ...CAPABILITIES }), modern({ 'Mcp-Method': 'tools/call', 'Mcp-Name': name }));
  return post(key, request('tools/call', { name, arguments: args }), handshake());
}

let t: Tenant;
beforeAll(async () => {
  // The OAuth issuer and resources are named after PUBLIC_BASE_URL: here, the API under test.
  process.env.PUBLIC_BASE_URL = api.url;
  resetConfig();
  resetOAuthProvider();
  t = await tenant({ scopes: ALL_TOOL_SCOPES });
});

describe('POST /mcp: the transport table', () => {
  it('GET and DELETE are 405; a session id is ignored and never issued', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${api.url}/mcp`, { method, headers: { authorization: `Bearer ${t.key}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    const res = await post(t.key, request('ping'), { ...handshake(), 'Mcp-Session-Id': 'old-client-session' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const init = await post(t.key, request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    expect(init.headers.get('mcp-session-id')).toBeNull();
  });

  it('notifications and responses get 202 with an empty body; a batch is 400', async () => {
    for (const era of [handshake(), modern()]) {
      const notification = await post(t.key, { jsonrpc: '2.0', method: 'notifications/initialized' }, era);
      expect([notification.status, notification.text, notification.headers.get('content-length')]).toEqual([202, '', '0']);
      const response = await post(t.key, { jsonrpc: '2.0', id: 7, result: {} }, era);
      expect([response.status, response.text]).toEqual([202, '']);
      const batch = await post(t.key, [request('ping'), request('ping', {}, 2)], era);
      expect(batch.status).toBe(400);
      expect(batch.body.error.code).toBe(-32600);
    }
    const malformed = await post(t.key, '{"jsonrpc":', handshake());
    expect([malformed.status, malformed.body.error.code]).toEqual([400, -32700]);
  });

  it('an unsupported MCP-Protocol-Version is 400 -32022 with the supported list and the echo; 2025-11-25 is deliberately unsupported', async () => {
    for (const version of ['2025-11-25', '1999-01-01']) {
      const res = await post(t.key, request('tools/list'), { 'MCP-Protocol-Version': version });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe(-32022);
      expect(res.body.error.data).toEqual({ supported: [MODERN, '2025-06-18', '2025-03-26', '2024-11-05'], requested: version });
    }
  });

  it('initialize answers in the newest handshake revision for an unknown version, and echoes a supported one', async () => {
    const unknown = await post(t.key, request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    expect(unknown.status).toBe(200);
    expect(unknown.body.result.protocolVersion).toBe('2025-06-18');
    expect(unknown.body.result.capabilities).toEqual({ tools: { listChanged: false } });
    const known = await post(t.key, request('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    expect(known.body.result.protocolVersion).toBe('2024-11-05');
    // Even when the header asserts an unsupported revision, the handshake itself answers.
    const asserted = await post(t.key, request('initialize', { protocolVersion: '2025-11-25' }), { 'MCP-Protocol-Version': '2025-11-25' });
    expect(asserted.body.result.protocolVersion).toBe('2025-06-18');
  });

  it('server/discover lists the revisions in either era', async () => {
    const modernDiscover = await post(t.key, request('server/discover', CAPABILITIES), modern({ 'Mcp-Method': 'server/discover' }));
    expect(modernDiscover.body.result.supportedVersions).toEqual([MODERN, '2025-06-18', '2025-03-26', '2024-11-05']);
    const handshakeDiscover = await post(t.key, request('server/discover'), handshake());
    expect(handshakeDiscover.body.result.supportedVersions).toHaveLength(4);
  });

  it('the era comes from the header alone: absent means 2025-03-26 (a handshake era: 200 for an unknown method)', async () => {
    const absent = await post(t.key, request('resources/list'));
    expect([absent.status, absent.body.error.code]).toEqual([200, -32601]);
    const modernUnknown = await post(t.key, request('resources/list', CAPABILITIES), modern());
    expect([modernUnknown.status, modernUnknown.body.error.code]).toEqual([404, -32601]);
    // initialize is the handshake's: a modern client has none.
    const modernInit = await post(t.key, request('initialize', { protocolVersion: MODERN, ...CAPABILITIES }), modern());
    expect([modernInit.status, modernInit.body.error.code]).toEqual([404, -32601]);
  });

  it('modern era: mirrored headers must agree with the body (-32020), and client capabilities must be present', async () => {
    const method = await post(t.key, request('tools/list', CAPABILITIES), modern({ 'Mcp-Method': 'tools/call' }));
    expect([method.status, method.body.error.code]).toEqual([400, -32020]);
    const name = await post(t.key, request('tools/call', { name: 'list_agents', arguments: {}, ...CAPABILITIES }), modern({ 'Mcp-Method': 'tools/call', 'Mcp-Name': 'read_usage' }));
    expect([name.status, name.body.error.code]).toEqual([400, -32020]);
    const bare = await post(t.key, request('tools/list'), modern());
    expect(bare.status).toBe(400);
    expect(bare.body.error.message).toMatch(/clientCapabilities/);
    // The handshake era has no mirrored headers to check.
    const old = await post(t.key, request('tools/list'), { ...handshake(), 'Mcp-Method': 'something/else' });
    expect(old.status).toBe(200);
  });

  it('refuses an unexpected Origin and admits the configured ones', async () => {
    expect((await post(t.key, request('ping'), { ...handshake(), Origin: 'https://evil.example' })).status).toBe(403);
    process.env.MCP_ALLOWED_ORIGINS = 'https://app.example';
    resetConfig();
    try {
      expect((await post(t.key, request('ping'), { ...handshake(), Origin: 'https://app.example' })).status).toBe(200);
      expect((await post(t.key, request('ping'), { ...handshake(), Origin: 'https://evil.example' })).status).toBe(403);
    } finally {
      delete process.env.MCP_ALLOWED_ORIGINS;
      resetConfig();
    }
  });

  it('401 names the resource metadata; 403 without mcp:connect; mcp:connect alone lists tools and calls none, naming every scope needed', async () => {
    const missing = await post(undefined, request('tools/list'), handshake());
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer .*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
    const noConnect = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'responses:create' });
    const refused = await post(noConnect.key, request('tools/list'), handshake());
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toMatch(/resource_metadata="[^"]+\/mcp", error="insufficient_scope", scope="mcp:connect"/);

    const connectOnly = await admin.createWorkspaceKey({ workspace: t.workspace, scopes: 'mcp:connect' });
    const listed = await post(connectOnly.key, request('tools/list'), handshake());
    expect(listed.status).toBe(200);
    const names = listed.body.result.tools.map((tool: { name: string }) => tool.name);
    expect(names).toEqual(['run_agent', 'create_response', 'list_agents', 'search_knowledge', 'list_documents', 'read_document', 'create_report', 'read_report', 'list_jobs', 'read_usage', 'read_conversation_messages']);
    for (const name of names) expect(name).toMatch(/^[a-z0-9_]+$/);
    for (const era of ['handshake', 'modern'] as const) {
      const call = await callTool(connectOnly.key, 'run_agent', { agent: t.agent, input: 'hi' }, era);
      expect(call.status).toBe(403);
      expect(call.headers.get('www-authenticate')).toMatch(/error="insufficient_scope", scope="mcp:connect agents:run"/);
    }
  });
});

describe('MCP tools', () => {
  it('run the HTTP endpoints: a response, an agent run, agents, usage and the conversation’s messages', async () => {
    const response = await callTool(t.key, 'create_response', { agent: t.agent, input: 'hello' }, 'modern');
    expect(response.status).toBe(200);
    expect(response.body.result.isError).toBe(false);
    expect(response.body.result.structuredContent).toMatchObject({ status: 'completed', agent: t.agent });

    const run = await callTool(t.key, 'run_agent', { agent: t.agent, input: 'hello', external_ref: 'mcp-user-1' });
    expect(run.body.result.structuredContent.status).toBe('completed');
    const conversation = run.body.result.structuredContent.conversation;
    const messages = await callTool(t.key, 'read_conversation_messages', { conversation });
    expect(messages.body.result.structuredContent.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);

    const agents = await callTool(t.key, 'list_agents', {});
    expect(agents.body.result.structuredContent.data.map((a: { id: string }) => a.id)).toEqual([t.agent]);
    const usage = await callTool(t.key, 'read_usage', { days: 7 });
    expect(usage.body.result.structuredContent).toMatchObject({ object: 'usage', days: 7 });
    expect(usage.body.result.structuredContent.total_credits).toBeGreaterThan(0);
    // The same answers as the HTTP endpoint itself.
    const viaHttp = await call(api.url, 'GET', '/api/v2/usage?days=7', { key: t.key });
    expect(usage.body.result.structuredContent).toEqual(viaHttp.body);
  });

  it('a run that waits for people answers with isError text naming the run and the action endpoint', async () => {
    const waits = await tenant({ scopes: ALL_TOOL_SCOPES, config: { tools: [{ type: 'http', name: 'get_location', parameters: { type: 'object' }, runs_on: 'client' }] } });
    await scriptModel(waits.model, [{ toolCalls: [{ name: 'get_location', arguments: '{}' }] }, { text: 'unused' }]);
    const run = await callTool(waits.key, 'run_agent', { agent: waits.agent, input: 'where am I?' });
    expect(run.status).toBe(200);
    expect(run.body.result.isError).toBe(true);
    const runId = /Run (run_\w+) is waiting/.exec(run.body.result.content[0].text)![1];
    expect(run.body.result.content[0].text).toContain(`get_location (call call_0: runs on the client). Answer with POST /api/v2/runs/${runId}/actions`);
    expect((await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: waits.key })).body.required_action.calls[0]).toMatchObject({ call_id: 'call_0', type: 'client_tool' });
  });

  it('failures inside a tool are 200 results with isError and readable text: not found, bad argument, credit, rate limit', async () => {
    const missing = await callTool(t.key, 'read_report', { report: 'rpt_01jc0000000000000000000000' });
    expect(missing.status).toBe(200);
    expect(missing.body.result).toMatchObject({ isError: true });
    expect(missing.body.result.content[0].text).toMatch(/report_not_found/);

    const bad = await callTool(t.key, 'create_response', { agent: t.agent, input: 'hi', temperature: 2 });
    expect(bad.body.result.isError).toBe(true);
    expect(bad.body.result.content[0].text).toMatch(/temperature/);
    const notAnObject = await post(t.key, request('tools/call', { name: 'list_agents', arguments: [1] }), handshake());
    expect(notAnObject.body.result).toMatchObject({ isError: true });
    // An id is one path segment: `..` would reach another endpoint than the one the scope was checked for.
    for (const agent of ['..', '.', 'agt_x/../../usage', 42]) {
      const escaped = await callTool(t.key, 'run_agent', { agent, input: 'hi' });
      expect(escaped.body.result).toMatchObject({ isError: true, content: [{ text: 'agent must be an id such as the ones list tools return.' }] });
    }

    const broke = await tenant({ scopes: ALL_TOOL_SCOPES, credits: 0 });
    const credit = await callTool(broke.key, 'create_response', { agent: broke.agent, input: 'hi' });
    expect(credit.body.result.isError).toBe(true);
    expect(credit.body.result.content[0].text).toMatch(/usage_blocked/);

    // The same counters as v2: one HTTP call and one tool call spend a two-call allowance.
    const limited = await tenant({ scopes: ALL_TOOL_SCOPES });
    process.env.RATE_LIMIT_CREDENTIAL = '2';
    resetConfig();
    try {
      await inOneRateWindow(async () => {
        expect((await call(api.url, 'GET', '/api/v2/usage', { key: limited.key })).status).toBe(200);
        expect((await callTool(limited.key, 'read_usage', {})).body.result.isError).toBe(false);
        const over = await callTool(limited.key, 'read_usage', {});
        expect(over.status).toBe(200);
        expect(over.body.result.isError).toBe(true);
        expect(over.body.result.content[0].text).toMatch(/Retry after \d+ seconds/);
        expect((await call(api.url, 'GET', '/api/v2/usage', { key: limited.key })).status).toBe(429);
        // Refused before any tool: still a JSON-RPC answer, with Retry-After.
        const listed = await post(limited.key, request('tools/list'), handshake());
        expect(listed.status).toBe(429);
        expect(Number(listed.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(listed.body).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32029, data: { retry_after: expect.any(Number) } } });
      });
    } finally {
      delete process.env.RATE_LIMIT_CREDENTIAL;
      resetConfig();
    }
  });

  it('an unknown tool is a JSON-RPC error, 404 for a modern client', async () => {
    const old = await callTool(t.key, 'drop_tables', {});
    expect([old.status, old.body.error.code]).toEqual([200, -32602]);
    const fresh = await callTool(t.key, 'drop_tables', {}, 'modern');
    expect([fresh.status, fresh.body.error.code]).toEqual([404, -32602]);
  });
});

describe('the official MCP SDK client', () => {
  it('connects with a bearer key, lists the tools and calls them', async () => {
    const client = new Client({ name: 'sdk-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${t.key}` } } });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe('agent-execution-service');
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(11);
      const answered = await client.callTool({ name: 'create_response', arguments: { agent: t.agent, input: 'from the SDK' } });
      expect(answered.isError).toBe(false);
      expect((answered.structuredContent as { status: string }).status).toBe('completed');
      const failed = await client.callTool({ name: 'read_document', arguments: { document: 'doc_01jc0000000000000000000000' } });
      expect(failed.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('MCP with OAuth 2.1', () => {
  it('a member authorizes a client for /mcp; the token calls the tools it was granted, and only on /mcp', async () => {
    const m = await member(t, 'owner');
    const { tokens } = await connect(m, { resource: `${api.url}/mcp`, scopes: ['mcp:connect', 'usage:read', 'agents:read'], grant: ['mcp:connect', 'usage:read'] });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } } }));
    try {
      const usage = await client.callTool({ name: 'read_usage', arguments: {} });
      expect(usage.isError).toBe(false);
      expect((usage.structuredContent as { object: string }).object).toBe('usage');
    } finally {
      await client.close();
    }
    // Not granted: refused before the tool, naming both scopes.
    const agents = await callTool(tokens.access_token, 'list_agents', {});
    expect(agents.status).toBe(403);
    expect(agents.headers.get('www-authenticate')).toMatch(/scope="mcp:connect agents:read"/);
    // A token for /mcp is not one for the v2 API, and the other way round.
    expect((await call(api.url, 'GET', '/api/v2/usage', { key: tokens.access_token })).status).toBe(401);
    const v2 = await connect(m, { resource: `${api.url}/api/v2`, scopes: ['mcp:connect', 'usage:read'], grant: ['mcp:connect', 'usage:read'] });
    expect((await call(api.url, 'GET', '/api/v2/usage', { key: v2.tokens.access_token })).status).toBe(200);
    const refused = await post(v2.tokens.access_token, request('tools/list'), handshake());
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
  });
});
