import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueryTypes } from 'sequelize';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { callTool, toolSecret } from '../activities/tools';
import { config as serviceConfig, resetConfig } from '../infra/config';
import { db } from '../db/sequelize';
import { parseAgentConfig } from '../contract/agentConfig';
import { costInputOf, maxRunCost } from '../domain/billing';
import { runLimits } from '../domain/limits';
import { call, closeAll, providerRequests, scriptModel, startApi, tenant } from './support/stack';
import { allFrames, openStream } from './support/sse';

interface Received {
  body: string;
  signature: string;
}

let api: { url: string; close(): Promise<void> };
let toolServer: Server;
let toolUrl = '';
const received: Received[] = [];
const answers: number[] = [];

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  api = await startApi();
  toolServer = createServer(async (req, res) => {
    received.push({ body: await readBody(req), signature: String(req.headers['x-service-signature']) });
    const status = answers.shift() ?? 200;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ order: 'A1', state: 'shipped' }));
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/orders`;
});
afterAll(async () => {
  toolServer.close();
  await api.close();
  await closeAll();
});

const withTools = () => ({
  tools: [
    { type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } }, url: toolUrl },
    { type: 'handoff' },
  ],
});
const lookup = { name: 'lookup_order', arguments: '{"id":"A1"}' };

describe('tools', () => {
  it('runs a tool call as an activity, streams its events, signs the request and feeds the result back to the model', async () => {
    received.length = 0;
    const t = await tenant({ scopes: ['responses:create', 'logs:read'], config: withTools() });
    await scriptModel(t.model, [{ toolCalls: [lookup] }, { chunks: ['It ', 'shipped.'] }]);
    const fs = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'Where is A1?', stream: true }))).filter((f) => f.event);
    expect(fs.map((f) => f.event)).toEqual(['response.started', 'response.tool.started', 'response.tool.completed', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    expect(fs[1].data).toMatchObject({ tool: 'lookup_order', call_id: 'call_0' });
    expect(fs.at(-1)!.data.output).toEqual([{ type: 'text', text: 'It shipped.' }]);

    expect(received).toHaveLength(1);
    expect(received[0].body).toBe('{"id":"A1"}');
    const [, t0, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(received[0].signature)!;
    expect(v1).toBe(createHmac('sha256', toolSecret(t.workspace)).update(`${t0}.${received[0].body}`).digest('hex'));

    const [first, second] = await providerRequests(t.model);
    expect(first.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(['lookup_order', 'handoff']);
    expect(first.body.tool_choice).toBe('auto');
    expect(second.body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: lookup }] },
      { role: 'tool', content: '{"order":"A1","state":"shipped"}', tool_call_id: 'call_0' },
    ]);
    const logs = await call(api.url, 'GET', '/api/v2/logs', { key: t.key });
    expect(logs.body.data[0].tool_names).toEqual(['lookup_order']);
  });

  it('holds for a round of large tool results at a token a character, or cuts them to what it holds: never charged less than its work', async () => {
    // Each call answers 16 KiB of CJK text (about a token a character), far past what the run's first hold counted for a round.
    const cjk = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('漢'.repeat(5_000)));
    await new Promise<void>((resolve) => cjk.listen(0, '127.0.0.1', resolve));
    try {
      const tools = [{ type: 'http', name: 'read_page', description: 'Read a page', parameters: { type: 'object', properties: { n: { type: 'integer' } } }, url: `http://127.0.0.1:${(cjk.address() as AddressInfo).port}/page` }];
      const calls = [1, 2].map((n) => ({ name: 'read_page', arguments: JSON.stringify({ n }) }));
      const config = parseAgentConfig({ model: 'x', tools });
      const firstHold = maxRunCost(costInputOf({ config, kind: 'response', input: 'Read pages 1 and 2', attachments: [], options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60000, responseFormat: { type: 'text' } }, limits: runLimits(undefined, serviceConfig().runLimits) }));
      // The call after the round reports more than the first hold: only a raised hold lets it all be charged.
      const ask = async (credits?: number) => {
        const t = await tenant({ config: { tools }, ...(credits !== undefined && { credits }) });
        await scriptModel(t.model, [{ toolCalls: calls }, { text: 'Read both.', usage: { prompt_tokens: firstHold + 10_000, completion_tokens: 5 } }]);
        const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Read pages 1 and 2' } });
        expect(res.body.status).toBe('completed');
        const tool = ((await providerRequests(t.model))[1].body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
        const [line] = await db().query<{ credits: number }>('SELECT l.credits FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', { replacements: { id: res.body.id }, type: QueryTypes.SELECT });
        return { tool, charged: Number(line.credits), usage: res.body.usage.total_tokens as number };
      };
      // With the balance to hold for them, the results go to the model whole, and the run is charged all it used.
      const whole = await ask();
      expect(whole.tool.map((c) => c.length)).toEqual([5_000, 5_000]);
      expect(whole.charged).toBe(whole.usage);
      expect(whole.charged).toBeGreaterThan(firstHold);
      // With nothing beyond the first hold, they are cut to what it counted (4,096 characters a round), saying so.
      const cut = await ask(firstHold);
      for (const c of cut.tool) {
        expect(c).toMatch(/^漢+\n\[cut to \d+ of 5000 characters: the run's credit hold covers no more\]$/);
        // The note counts against the result's share of the 4,096.
        expect(c.length).toBe(2_048);
      }
    } finally {
      cjk.close();
    }
  });

  it('runs the tool calls of one reply at once and feeds their results back in the model\'s order', async () => {
    // This target answers no call until all three have arrived: made one after another, the first never gets its answer.
    const waiting: { id: string; answer: () => void }[] = [];
    const together = createServer(async (req, res) => {
      const { id } = JSON.parse(await readBody(req)) as { id: string };
      waiting.push({ id, answer: () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ order: id })) });
      if (waiting.length === 3) for (const w of waiting.splice(0)) w.answer();
    });
    await new Promise<void>((resolve) => together.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(together.address() as AddressInfo).port}/orders`;
      const t = await tenant({ config: { tools: [{ type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } }, url }] } });
      const calls = ['A1', 'B2', 'C3'].map((id) => ({ name: 'lookup_order', arguments: JSON.stringify({ id }) }));
      await scriptModel(t.model, [{ toolCalls: calls }, { text: 'All three found.' }]);
      const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Where are A1, B2 and C3?' } });
      expect(res.status).toBe(200);
      expect(res.body.output).toEqual([{ type: 'text', text: 'All three found.' }]);
      const [, second] = await providerRequests(t.model);
      expect(second.body.messages.slice(-3)).toEqual([
        { role: 'tool', content: '{"order":"A1"}', tool_call_id: 'call_0' },
        { role: 'tool', content: '{"order":"B2"}', tool_call_id: 'call_1' },
        { role: 'tool', content: '{"order":"C3"}', tool_call_id: 'call_2' },
      ]);
    } finally {
      together.close();
    }
  });

  it('fails the run with 502 tool_execution_failed when a required tool keeps failing, after its retries', async () => {
    received.length = 0;
    answers.push(500, 503, 500);
    const t = await tenant({ scopes: ['responses:create'], config: withTools() });
    await scriptModel(t.model, [{ toolCalls: [lookup] }, { text: 'never reached' }]);
    const fs = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true, tool_policy: 'required' }))).filter((f) => f.event);
    expect(fs.map((f) => f.event)).toEqual(['response.started', 'response.tool.started', 'response.tool.failed', 'response.failed']);
    expect(fs.at(-1)!.data.error.code).toBe('tool_execution_failed');
    expect(received).toHaveLength(3);
    const sent = await providerRequests(t.model);
    expect(sent).toHaveLength(1);
    expect(sent[0].body.tool_choice).toBe('required');

    await scriptModel(t.model, [{ toolCalls: [lookup] }]);
    answers.push(404);
    const plain = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', tool_policy: 'required' } });
    expect(plain.status).toBe(502);
    expect(plain.body).toMatchObject({ error: { code: 'tool_execution_failed' }, status: 'failed' });
  });

  it('lets the model carry on when a tool fails under auto', async () => {
    answers.push(400);
    const t = await tenant({ scopes: ['responses:create'], config: withTools() });
    await scriptModel(t.model, [{ toolCalls: [lookup] }, { text: 'Sorry, I could not look that up.' }]);
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    expect(res.status).toBe(200);
    const second = (await providerRequests(t.model))[1];
    expect(second.body.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('The tool failed') });
  });

  it('offers no tools with tool_policy none', async () => {
    const t = await tenant({ scopes: ['responses:create'], config: withTools() });
    await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', options: { tool_policy: 'none' } } });
    const [sent] = await providerRequests(t.model);
    expect(sent.body.tools).toBeUndefined();
    expect(sent.body.tool_choice).toBeUndefined();
  });

  it('hands off: the assistant stops, the run completes with the handoff visible, and handoff.requested is written', async () => {
    const t = await tenant({ scopes: ['agents:run'], config: withTools(), listened: true });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'handoff', arguments: '{"reason":"Customer asks for a refund over the limit"}' }] }, { text: 'never reached' }]);
    const res = await call(api.url, 'POST', `/api/v2/agents/${t.agent}/runs`, { key: t.key, body: { input: 'I want a refund' } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(res.body.output).toEqual([{ type: 'handoff', text: 'Customer asks for a refund over the limit' }]);
    expect(await providerRequests(t.model)).toHaveLength(1);
    const events = await db().query<{ envelope: any }>(
      "SELECT e.envelope FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws AND e.type = 'handoff.requested'",
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(events).toHaveLength(1);
    expect(events[0].envelope.data.object).toMatchObject({ run: res.body.id, conversation: res.body.conversation, reason: 'Customer asks for a refund over the limit' });
  });

  it('refuses loopback, private and link-local tool targets at connection time', async () => {
    const allowed = process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = '';
    resetConfig();
    try {
      for (const url of [toolUrl, 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x', 'http://localhost:9/x']) {
        const attempt = new MockActivityEnvironment().run(callTool, { runId: 'run_x', deadline: { at: Date.now() + 60_000, timeoutMs: 60_000 }, workspacePublicId: 'ws_x', callId: 'c', tool: { type: 'http' as const, name: 'probe', url }, arguments: '{}' });
        await expect(attempt).rejects.toBeInstanceOf(ApplicationFailure);
        await expect(attempt).rejects.toMatchObject({ type: 'tool_execution_failed', nonRetryable: true, message: expect.stringContaining('refused target address') });
      }
      expect(received.some((r) => r.body === '{}')).toBe(false);
    } finally {
      process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = allowed;
      resetConfig();
    }
  });

  it("stops a tool request at the run's deadline and fails the run with the timeout, not as a tool failure", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/never-answers`;
      const attempt = new MockActivityEnvironment().run(callTool, { runId: 'run_x', deadline: { at: Date.now() + 300, timeoutMs: 300 }, workspacePublicId: 'ws_x', callId: 'c', tool: { type: 'http' as const, name: 'slow', url }, arguments: '{}' });
      // Without the deadline the request would run into the tool's own 10 s timeout, a retryable tool failure.
      await expect(attempt).rejects.toMatchObject({ type: 'provider_unavailable', nonRetryable: true, message: expect.stringContaining('timeout_ms (300 ms)') });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
