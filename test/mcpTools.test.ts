import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ValidationError } from 'yup';
import { parseAgentConfig } from '../contract/agentConfig';
import { runTimeline } from '../api/dashboard/runTimeline';
import { resetConfig } from '../infra/config';
import { targetFetch, TargetRefused, type Resolver } from '../infra/outboundTarget';
import { MCP_SERVER_PROMPT_TOKENS, offeredMcpTools } from '../domain/mcpTools';
import { temporal } from '../infra/temporalClient';
import { call, providerRequests, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { allFrames, openStream } from './support/sse';
import * as admin from '../admin/commands';
import { changingToolsServer, everythingServer, type EverythingServer } from './support/mcpEverything';
import { openedPayloads, plaintextOf, storedPayloads } from './support/payloads';

/**
 * Remote MCP servers as an agent's tools, against real servers: the MCP project's reference server
 * (`@modelcontextprotocol/server-everything`, Streamable HTTP on a loopback port), and this service's
 * own `/mcp` reached with another workspace's key. The stub provider decides which tools the model calls.
 */
const api = useApi();
let everything: EverythingServer;
beforeAll(async () => {
  everything = await everythingServer();
});
afterAll(async () => {
  await everything?.stop();
});
/** What a test started, stopped after it whatever its outcome. */
const cleanups: (() => Promise<void>)[] = [];
const afterEachTest = (cleanup: () => Promise<void>) => cleanups.push(cleanup);
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

const SCOPES = ['responses:create', 'secrets:write', 'logs:read'];
const server = (extra: Record<string, unknown> = {}) => ({ type: 'mcp', server_label: 'everything', server_url: everything.url, allowed_tools: ['echo', 'get-sum', 'trigger-long-running-operation'], ...extra });
const respond = (t: Tenant, body: Record<string, unknown> = {}) => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Use the tools.', ...body } });
const streamed = async (t: Tenant, body: Record<string, unknown> = {}) =>
  (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'Use the tools.', stream: true, ...body }))).filter((f) => f.event);
/** What the model was told of each tool call, in its second request. */
const toolResults = async (t: Tenant) => ((await providerRequests(t.model))[1].body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
const offered = async (t: Tenant) => ((await providerRequests(t.model))[0].body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name);

describe('MCP servers as agent tools', () => {
  it("offers the server's allowed tools as label__tool, and calls echo through a run: one activity, the text to the model", async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"hi"}' }] }, { text: 'It said hi.' }]);
    const answered = await respond(t);
    expect(answered.body).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'It said hi.' }] });
    expect(await offered(t)).toEqual(['everything__echo', 'everything__get-sum', 'everything__trigger-long-running-operation']);
    const [first] = await providerRequests(t.model);
    expect(first.body.tools[0].function).toMatchObject({ name: 'everything__echo', parameters: { type: 'object', properties: { message: { type: 'string' } } } });
    expect(await toolResults(t)).toEqual(['Echo: hi']);
    const history = (await (await temporal()).workflow.getHandle(answered.body.id).fetchHistory()).events ?? [];
    expect(history.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callMcpTool')).toHaveLength(1);
    // The operator's timeline names the server and the tool, with the call's latency.
    const steps = (await runTimeline(answered.body.id))!.steps;
    expect(steps.find((step) => step.label === 'mcp everything echo')).toMatchObject({ kind: 'tool_call', status: 'completed', attempts: 1, latencyMs: expect.any(Number) });
    expect(steps.map((step) => step.label)).toContain('mcp tools/list everything');
  });

  it('streams the call of get-sum: started, completed, then the answer', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__get-sum', arguments: '{"a":2,"b":3}' }] }, { chunks: ['Five', '.'] }]);
    const frames = await streamed(t);
    expect(frames.map((f) => f.event)).toEqual(['response.started', 'response.tool.started', 'response.tool.completed', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    expect(frames[1].data).toMatchObject({ tool: 'everything__get-sum', call_id: 'call_0' });
    expect(await toolResults(t)).toEqual(['The sum of 2 and 3 is 5.']);
  });

  it('never calls a tool outside allowed_tools, names content that is not text, and a result with isError is a failure the model sees', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server({ allowed_tools: ['echo', 'get-tiny-image'] })] } });
    await scriptModel(t.model, [
      { toolCalls: [{ name: 'everything__get-env', arguments: '{}' }, { name: 'everything__echo', arguments: '{"message":123}' }, { name: 'everything__get-tiny-image', arguments: '{}' }] },
      { text: 'Neither worked.' },
    ]);
    const frames = await streamed(t);
    expect(await offered(t)).toEqual(['everything__echo', 'everything__get-tiny-image']);
    const [refused, failed, image] = await toolResults(t);
    expect(image).toBe("Here's the image you requested:\n[image: image/png, not shown]\nThe image above is the MCP logo.");
    // Had get-env been called, its answer would be the server's environment.
    expect(refused).toBe('No tool named everything__get-env is available.');
    expect(failed).toMatch(/^The tool reported an error: .*Input validation error/);
    expect(frames.find((f) => f.event === 'response.tool.failed')?.data).toMatchObject({ call_id: 'call_1', tool: 'everything__echo', error: expect.stringContaining('Input validation error') });
    expect(frames.at(-1)!.event).toBe('response.completed');
  });

  it('waits for approval of a tool the agent marks required, showing its arguments, then calls it', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server({ approval: { tools: { 'get-sum': 'required' } } })] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__get-sum', arguments: '{"a":4,"b":5}' }] }, { text: 'Nine.' }]);
    const waiting = await respond(t);
    expect(waiting.status).toBe(202);
    const [pending] = waiting.body.required_action.calls;
    expect(pending).toMatchObject({ call_id: 'call_0', type: 'approval', tool: 'everything__get-sum', arguments: '{"a":4,"b":5}' });
    expect(pending.arguments_sha256).toBe(createHash('sha256').update('{"a":4,"b":5}').digest('hex'));
    const approved = await call(api.url, 'POST', `/api/v2/runs/${waiting.body.id}/actions`, { key: t.key, body: { call_id: 'call_0', decision: 'approve', arguments_sha256: pending.arguments_sha256 } });
    expect(approved.status).toBe(200);
    await until(async () => ((await call(api.url, 'GET', `/api/v2/runs/${waiting.body.id}`, { key: t.key })).body.status === 'completed' ? true : undefined), 'the approved run to complete');
    expect(await toolResults(t)).toEqual(['The sum of 4 and 5 is 9.']);
  });

  it("streams a long-running tool's progress notifications", async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__trigger-long-running-operation', arguments: '{"duration":0.4,"steps":2}' }] }, { text: 'Done.' }]);
    const frames = await streamed(t);
    expect(frames.filter((f) => f.event === 'response.tool.progress').map((f) => f.data)).toEqual([
      { id: frames[0].data.id, call_id: 'call_0', tool: 'everything__trigger-long-running-operation', progress: 1, total: 2 },
      { id: frames[0].data.id, call_id: 'call_0', tool: 'everything__trigger-long-running-operation', progress: 2, total: 2 },
    ]);
    expect(frames.map((f) => f.event).filter((e) => e !== 'response.tool.progress')).toEqual(['response.started', 'response.tool.started', 'response.tool.completed', 'response.output_text.delta', 'response.completed']);
  });

  it('a server that is down: left out with response.tool.failed under auto, the run failed under required; once back, and once restarted between runs, it is used again (its session opened anew)', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [server()] } });
    // A session with the server is open in the worker from this run on.
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"before"}' }] }, { text: 'ok' }]);
    expect((await respond(t)).body.status).toBe('completed');
    await everything.stop();
    try {
      await scriptModel(t.model, [{ text: 'Answered without it.' }]);
      const frames = await streamed(t, { tool_policy: 'auto' });
      expect(frames.map((f) => f.event)).toEqual(['response.started', 'response.tool.failed', 'response.output_text.delta', 'response.completed']);
      expect(frames[1].data).toEqual({ id: frames[0].data.id, tool: 'everything', error: expect.stringContaining('MCP server everything could not be reached') });
      expect((await providerRequests(t.model)).at(-1)!.body.tools).toBeUndefined();
      const required = await respond(t, { tool_policy: 'required' });
      expect(required.status).toBe(502);
      expect(required.body.error).toMatchObject({ code: 'tool_execution_failed', message: expect.stringContaining('MCP server everything could not be reached') });
    } finally {
      await everything.start();
    }
    // The worker's session died with the server: the next call opens another, unseen by the run.
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"after"}' }] }, { text: 'ok' }]);
    const again = await respond(t);
    expect(again.body.status).toBe('completed');
    expect((await providerRequests(t.model)).at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Echo: after' });
    // Restarted between two runs, the server no longer knows the worker's open session: it is opened again within the run.
    await everything.stop();
    await everything.start();
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"anew"}' }] }, { text: 'ok' }]);
    const frames = await streamed(t);
    expect(frames.map((f) => f.event)).toEqual(['response.started', 'response.tool.started', 'response.tool.completed', 'response.output_text.delta', 'response.completed']);
    expect((await providerRequests(t.model)).at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Echo: anew' });
  });

  it("offers a server's new tool once it says its list changed, before the kept listing would expire", async () => {
    const changing = await changingToolsServer('alpha');
    try {
      const t = await tenant({ scopes: SCOPES, config: { tools: [{ type: 'mcp', server_label: 'changing', server_url: changing.url }] } });
      await scriptModel(t.model, [{ text: 'ok' }]);
      await respond(t);
      expect(await offered(t)).toEqual(['changing__alpha']);
      changing.addTool('beta');
      // Within until's 45 s, below the listing's 60 s: only the notification can have dropped it.
      await until(async () => {
        await scriptModel(t.model, [{ text: 'ok' }]);
        await respond(t);
        const tools = ((await providerRequests(t.model)).at(-1)!.body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name);
        return tools.includes('changing__beta') ? true : undefined;
      }, 'the new tool to be offered');
    } finally {
      await changing.close();
    }
  });

  it('sends the credential, a workspace secret, as the bearer token, and it is in no stream, log, or Temporal payload', async () => {
    const remote = await changingToolsServer('alpha');
    afterEachTest(() => remote.close());
    const t = await tenant({ scopes: SCOPES, config: { tools: [{ type: 'mcp', server_label: 'remote', server_url: remote.url, credential: 'remote-token' }] } });
    const secret = `sk-live-${createHash('sha256').update(String(Math.random())).digest('hex')}`;
    expect((await call(api.url, 'PUT', '/api/v2/secrets/remote-token', { key: t.key, body: { value: secret, origin: new URL(remote.url).origin } })).status).toBe(200);
    await scriptModel(t.model, [{ toolCalls: [{ name: 'remote__alpha', arguments: '{}' }] }, { chunks: ['Done.'] }]);
    const frames = await streamed(t);
    expect(frames.at(-1)!.event).toBe('response.completed');
    expect(await toolResults(t)).toEqual(['alpha']);
    expect(remote.authorizations.length).toBeGreaterThan(2);
    expect(new Set(remote.authorizations)).toEqual(new Set([`Bearer ${secret}`]));
    const runId = frames[0].data.id;
    expect(JSON.stringify(frames)).not.toContain(secret);
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: t.key })).text).not.toContain(secret);
    expect((await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key })).text).not.toContain(secret);
    // Every payload of the run's history, raw and opened with the codec: the config names the secret, never holds it.
    const stored = storedPayloads(runId);
    expect(stored.length).toBeGreaterThan(3);
    const raw = JSON.stringify(stored) + plaintextOf(stored);
    expect(raw).not.toContain(secret);
    expect(raw).not.toContain(Buffer.from(secret).toString('base64'));
    const opened = JSON.stringify(await openedPayloads(stored));
    expect(opened).toContain('remote-token');
    expect(opened).not.toContain(secret);
  });

  it("sends a secret to one origin only: the one it was set for, or an operator's unbound one's first use; an agent pointed elsewhere cannot take it", async () => {
    const [first, elsewhere] = [await changingToolsServer('alpha'), await changingToolsServer('alpha')];
    afterEachTest(async () => {
      await first.close();
      await elsewhere.close();
    });
    const mcp = (label: string, url: string) => ({ type: 'mcp', server_label: label, server_url: url, credential: 'token' });
    const t = await tenant({ scopes: [...SCOPES, 'secrets:read'], config: { tools: [mcp('first', first.url)] } });
    const secret = `sk-live-${createHash('sha256').update(String(Math.random())).digest('hex')}`;
    // Set by an operator without an origin (the API requires one): bound at its first use.
    expect(await admin.setSecret({ workspace: t.workspace, name: 'token', value: secret })).toEqual({ name: 'token' });
    expect((await call(api.url, 'GET', '/api/v2/secrets', { key: t.key })).body.data).toEqual([expect.objectContaining({ name: 'token', origin: null })]);
    await scriptModel(t.model, [{ text: 'ok' }]);
    await respond(t);
    // Bound at its first use.
    expect((await call(api.url, 'GET', '/api/v2/secrets', { key: t.key })).body.data).toEqual([expect.objectContaining({ name: 'token', origin: new URL(first.url).origin })]);
    // Whoever edits an agent to send it elsewhere gets no token there: the server is as unreachable.
    const thief = await admin.createAgent({ workspace: t.workspace, name: 'elsewhere', config: { model: t.model, tools: [mcp('elsewhere', elsewhere.url)] } });
    await scriptModel(t.model, [{ text: 'ok' }]);
    const frames = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: thief.id, input: 'hi', stream: true }))).filter((f) => f.event);
    expect(frames[1]).toMatchObject({ event: 'response.tool.failed', data: { tool: 'elsewhere', error: expect.stringContaining(`sent only to ${new URL(first.url).origin}`) } });
    expect(elsewhere.authorizations).toEqual([]);
    expect(JSON.stringify(frames)).not.toContain(secret);
    // Set again with an origin of its own choosing, it goes there (and no longer to the first).
    expect((await call(api.url, 'PUT', '/api/v2/secrets/token', { key: t.key, body: { value: secret, origin: new URL(elsewhere.url).origin } })).body.origin).toBe(new URL(elsewhere.url).origin);
    await scriptModel(t.model, [{ text: 'ok' }]);
    const moved = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: thief.id, input: 'hi', stream: true }))).filter((f) => f.event);
    expect(moved.map((f) => f.event)).not.toContain('response.tool.failed');
    expect(elsewhere.authorizations).toContain(`Bearer ${secret}`);
    expect((await call(api.url, 'PUT', '/api/v2/secrets/token', { key: t.key, body: { value: secret, origin: 'https://mcp.example.com/path' } })).status).toBe(400);
  });

  it('sends a secret bound to an origin and path prefix only to servers under that prefix, not to another path of the same origin', async () => {
    const host = await changingToolsServer('alpha');
    afterEachTest(() => host.close());
    // One origin serving two tenants by path.
    const origin = new URL(host.url).origin;
    const mcp = (label: string, path: string) => ({ type: 'mcp', server_label: label, server_url: `${origin}${path}`, credential: 'token' });
    const t = await tenant({ scopes: [...SCOPES, 'secrets:read'], config: { tools: [mcp('a', '/tenant-a/mcp')] } });
    const secret = `sk-live-${createHash('sha256').update(String(Math.random())).digest('hex')}`;
    const set = await call(api.url, 'PUT', '/api/v2/secrets/token', { key: t.key, body: { value: secret, origin: `${origin}/tenant-a/` } });
    expect([set.status, set.body.origin]).toEqual([200, `${origin}/tenant-a/`]);
    await scriptModel(t.model, [{ toolCalls: [{ name: 'a__alpha', arguments: '{}' }] }, { text: 'Done.' }]);
    expect((await respond(t)).body.status).toBe('completed');
    expect(await toolResults(t)).toEqual(['alpha']);
    expect(new Set(host.authorizations)).toEqual(new Set([`Bearer ${secret}`]));

    // An agent pointed at the other tenant's path, or out of the prefix by dot segments: refused before any request.
    const sent = host.authorizations.length;
    for (const [label, path] of [['b', '/tenant-b/mcp'], ['dots', '/tenant-a/../tenant-b/mcp']]) {
      const other = await admin.createAgent({ workspace: t.workspace, name: label, config: { model: t.model, tools: [mcp(label, path)] } });
      await scriptModel(t.model, [{ text: 'ok' }]);
      const frames = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: other.id, input: 'hi', stream: true }))).filter((f) => f.event);
      expect(frames[1]).toMatchObject({ event: 'response.tool.failed', data: { tool: label, error: expect.stringContaining(`sent only to ${origin}/tenant-a/`) } });
      expect(JSON.stringify(frames)).not.toContain(secret);
    }
    expect(host.authorizations.length).toBe(sent);

    // An operator's unbound secret binds at its first use to that server's origin and path prefix, not to the origin.
    expect(await admin.setSecret({ workspace: t.workspace, name: 'first', value: secret })).toEqual({ name: 'first' });
    const firstUse = await admin.createAgent({ workspace: t.workspace, name: 'first-use', config: { model: t.model, tools: [{ ...mcp('a', '/tenant-a/mcp'), credential: 'first' }] } });
    await scriptModel(t.model, [{ text: 'ok' }]);
    expect((await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: firstUse.id, input: 'hi' } })).body.status).toBe('completed');
    const listed = (await call(api.url, 'GET', '/api/v2/secrets', { key: t.key })).body.data;
    expect(listed).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'first', origin: `${origin}/tenant-a/` })]));
    const usedOnce = host.authorizations.length;
    const thief = await admin.createAgent({ workspace: t.workspace, name: 'thief', config: { model: t.model, tools: [{ ...mcp('b', '/tenant-b/mcp'), credential: 'first' }] } });
    await scriptModel(t.model, [{ text: 'ok' }]);
    const frames = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: thief.id, input: 'hi', stream: true }))).filter((f) => f.event);
    expect(frames[1]).toMatchObject({ event: 'response.tool.failed', data: { tool: 'b', error: expect.stringContaining(`sent only to ${origin}/tenant-a/`) } });
    expect(host.authorizations.length).toBe(usedOnce);
  });

  it("reaches this service's own /mcp as a remote: workspace A's agent calls workspace B's tools with B's key, under B's scopes", async () => {
    const b = await tenant({ scopes: ['mcp:connect', 'agents:read'] });
    const a = await tenant({
      scopes: SCOPES,
      config: { tools: [{ type: 'mcp', server_label: 'other', server_url: `${api.url}/mcp`, allowed_tools: ['list_agents', 'read_usage'], credential: 'b-key' }] },
    });
    await call(api.url, 'PUT', '/api/v2/secrets/b-key', { key: a.key, body: { value: b.key, origin: new URL(api.url).origin } });
    await scriptModel(a.model, [{ toolCalls: [{ name: 'other__list_agents', arguments: '{}' }, { name: 'other__read_usage', arguments: '{}' }] }, { text: 'Listed.' }]);
    expect((await respond(a)).body.status).toBe('completed');
    expect(await offered(a)).toEqual(['other__list_agents', 'other__read_usage']);
    const [agents, usage] = await toolResults(a);
    // B's agents, not A's; and B's key lacks usage:read, which B's scopes decide.
    expect(agents).toContain(b.agent);
    expect(agents).not.toContain(a.agent);
    expect(usage).toMatch(/^The tool failed: .*permission_denied.*usage:read/s);
  });
});

describe('the mcp tool config and its connections', () => {
  it('is checked when the agent is configured: label, URL, approval, credential name, one label per server', () => {
    const mcp = { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/mcp' };
    expect(parseAgentConfig({ tools: [{ ...mcp, allowed_tools: ['search'], approval: { tools: { search: 'required' } }, credential: 'docs.token' }] }).tools).toHaveLength(1);
    const refused = (tool: Record<string, unknown>, tools: unknown[] = [{ ...mcp, ...tool }]) => {
      try {
        parseAgentConfig({ tools });
      } catch (err) {
        return (err as ValidationError).message;
      }
      return 'taken';
    };
    expect(refused({ server_label: 'two__parts' })).toMatch(/server_label must be/);
    // `my_` + `__` + `search` would read as server `my`, tool `_search`.
    expect(refused({ server_label: 'my_' })).toMatch(/server_label must be/);
    expect(refused({ server_label: '_my' })).toMatch(/server_label must be/);
    expect(refused({ server_url: 'ftp://mcp.example.com' })).toMatch(/server_url must be https/);
    expect(refused({ approval: 'sometimes' })).toMatch(/approval must be/);
    expect(refused({ approval: { tools: { search: 'maybe' } } })).toMatch(/approval must be/);
    expect(refused({ credential: 'sk-live 123' })).toMatch(/credential must name a workspace secret/);
    expect(refused({ token: 'sk-live-123' })).toMatch(/unspecified keys: token/);
    expect(refused({}, [mcp, { ...mcp, server_url: 'https://other.example.com/mcp' }])).toMatch(/same server_label/);
    expect(refused({}, Array.from({ length: 11 }, (_, i) => ({ ...mcp, server_label: `s${i}` })))).toMatch(/at most 10 mcp tools/);
    expect(parseAgentConfig({ tools: Array.from({ length: 10 }, (_, i) => ({ ...mcp, server_label: `s${i}` })) }).tools).toHaveLength(10);
  });

  it("offers a server's allowed tools whose names a provider takes, as many as a server's share of the prompt covers", () => {
    const docs = { type: 'mcp' as const, server_label: 'docs', server_url: 'https://mcp.example.com/mcp' };
    const listing = [
      { name: 'search', description: 'Search', inputSchema: { type: 'object' } },
      { name: 'files.read', inputSchema: { type: 'object' } },
      { name: 'x'.repeat(60), inputSchema: { type: 'object' } },
      { name: 'huge', description: 'd'.repeat(4 * MCP_SERVER_PROMPT_TOKENS), inputSchema: { type: 'object' } },
      { name: 'after', inputSchema: { type: 'object' } },
    ];
    expect(offeredMcpTools(docs, listing).map((t) => t.name)).toEqual(['docs__search']);
    expect(offeredMcpTools({ ...docs, allowed_tools: ['after'] }, listing)).toEqual([{ name: 'docs__after', parameters: { type: 'object' }, tool: 'after' }]);
  });

  it("refuses, on the client's own connections, a server name that resolves to loopback after it was checked (DNS rebinding)", async () => {
    const allowed = process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = '';
    resetConfig();
    let connections = 0;
    const local = http.createServer((_, res) => res.end('{}')).on('connection', () => connections++);
    await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
    try {
      const port = (local.address() as AddressInfo).port;
      const rebinding: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
      const failed = await targetFetch(rebinding)(`https://rebind.example:${port}/mcp`, { method: 'POST', body: '{}' }).catch((err: Error) => err);
      expect((failed as Error & { cause?: unknown }).cause).toBeInstanceOf(TargetRefused);
      await expect(targetFetch()(`https://127.0.0.1:${port}/mcp`)).rejects.toBeInstanceOf(TargetRefused);
      await expect(targetFetch()(`http://rebind.example:${port}/mcp`)).rejects.toThrow('the URL must use https');
      await expect(targetFetch()(`https://[::1]:${port}/mcp`)).rejects.toBeInstanceOf(TargetRefused);
      expect(connections).toBe(0);
    } finally {
      local.close();
      process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = allowed;
      resetConfig();
    }
  });
});
