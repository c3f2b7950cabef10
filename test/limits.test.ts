import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueryTypes } from 'sequelize';
import { ValidationError } from 'yup';
import * as admin from '../admin/commands';
import { parseAgentConfig } from '../contract/agentConfig';
import { db } from '../db/sequelize';
import { DEFAULT_MAX_MODEL_CALLS } from '../domain/limits';
import { resetConfig } from '../infra/config';
import { call, closeAll, providerRequests, scriptModel, startApi, tenant } from './support/stack';
import { allFrames, openStream } from './support/sse';

/**
 * Run budgets and loop control (docs/api.md, "Budgets and limits"), on the real stack, with the stub
 * model made to call a tool on every reply: whatever the model does, a run ends at its limits,
 * completed and incomplete, and is charged within its budget.
 */
let api: { url: string; close(): Promise<void> };
let toolServer: Server;
let toolUrl = '';
/** Tool calls the tool's server received, by the id the test put in its path. */
const received = new Map<string, number>();

beforeAll(async () => {
  api = await startApi();
  toolServer = createServer((req, res) => {
    const id = String(req.url).split('/').pop()!;
    received.set(id, (received.get(id) ?? 0) + 1);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"found":true}');
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/lookup`;
});
afterAll(async () => {
  toolServer.close();
  await api.close();
  await closeAll();
});

let counter = 0;
/** An agent with one HTTP tool whose calls are counted apart from every other test's. */
async function looping(limits?: Record<string, number>, options: { scopes?: string[]; usage?: { prompt_tokens: number; completion_tokens: number } } = {}) {
  const id = `t${++counter}`;
  const tools = [{ type: 'http', name: 'lookup', description: 'Look it up', parameters: { type: 'object', properties: {} }, url: `${toolUrl}/${id}` }];
  const t = await tenant({ scopes: options.scopes, config: { tools, ...(limits && { limits }) } });
  // The model calls the tool on every reply, far more often than any limit allows.
  await scriptModel(t.model, Array.from({ length: 80 }, (_, i) => ({ text: `step ${i + 1}`, toolCalls: [{ name: 'lookup', arguments: '{}' }], ...(options.usage && { usage: options.usage }) })));
  return { ...t, toolCalls: () => received.get(id) ?? 0 };
}

const ledgerOf = async (runId: string) =>
  (await db().query<{ credits: string; held: string }>('SELECT l.credits, r.held_credits AS held FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :runId', { replacements: { runId }, type: QueryTypes.SELECT }))[0];

describe('an agent’s limits', () => {
  it('are checked when the agent is created, its draft saved and published: each a positive integer, max_model_calls within the ceiling', async () => {
    expect(parseAgentConfig({ limits: { max_tool_calls: 3, max_model_calls: 6, max_run_credits: 5_000, max_output_tokens_total: 900 } }).limits).toEqual({ max_tool_calls: 3, max_model_calls: 6, max_run_credits: 5_000, max_output_tokens_total: 900 });
    const refused = (limits: unknown) => {
      try {
        parseAgentConfig({ limits });
      } catch (err) {
        return (err as ValidationError).message;
      }
      return 'accepted';
    };
    expect(refused({ max_tool_calls: 0 })).toBe('limits.max_tool_calls must be a positive integer');
    expect(refused({ max_model_calls: 2.5 })).toBe('limits.max_model_calls must be a positive integer');
    expect(refused({ max_run_credits: '100' })).toBe('limits.max_run_credits must be a positive integer');
    expect(refused({ max_output_tokens_total: -1 })).toBe('limits.max_output_tokens_total must be a positive integer');
    expect(refused({ max_turns: 3 })).toMatch(/^limits has an unknown key: max_turns; it takes max_tool_calls, max_model_calls, max_run_credits, max_output_tokens_total$/);
    expect(refused({ max_model_calls: 51 })).toBe('limits.max_model_calls may be at most 50 (this service\'s ceiling), got 51');
    expect(refused([3])).toMatch(/limits must be a `object` type/);

    const ws = await admin.createWorkspace({ name: 'limits', credits: 0 });
    await expect(admin.createAgent({ workspace: ws.id, name: 'a', config: { limits: { max_tool_calls: 0 } } })).rejects.toThrow('limits.max_tool_calls must be a positive integer');
    const agent = await admin.createAgent({ workspace: ws.id, name: 'a', config: { limits: { max_model_calls: 20 } } });
    await expect(admin.updateAgentDraft({ agent: agent.id, config: { limits: { max_run_credits: 0 } } })).rejects.toThrow('limits.max_run_credits must be a positive integer');
    await admin.updateAgentDraft({ agent: agent.id, config: { limits: { max_model_calls: 30 } } });
    // The operator lowers the ceiling: the draft saved before it is refused at publish.
    process.env.RUN_MODEL_CALLS_MAX = '25';
    resetConfig();
    try {
      await expect(admin.publishAgent({ agent: agent.id })).rejects.toThrow("limits.max_model_calls may be at most 25 (this service's ceiling), got 30");
    } finally {
      delete process.env.RUN_MODEL_CALLS_MAX;
      resetConfig();
    }
    await expect(admin.publishAgent({ agent: agent.id })).resolves.toMatchObject({ version: 2 });
  });

  it('max_tool_calls 3 ends the run with exactly 3 tool calls, completed with the reason', async () => {
    const t = await looping({ max_tool_calls: 3 });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Look it up, forever' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', incomplete_details: { reason: 'max_tool_calls' } });
    expect(t.toolCalls()).toBe(3);
    // The fourth reply asked for a fourth call: none was made, and no model call came after it.
    expect(await providerRequests(t.model)).toHaveLength(4);
    // The stub says nothing beside its calls (content null), so there is no text to keep; a model that does keeps it (test/agentRun.workflow.test.ts).
    expect(res.body.output).toEqual([]);
  });

  it('without limits, a run ends at the service default of model calls, long before its timeout', async () => {
    const t = await looping();
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Look it up, forever' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', incomplete_details: { reason: 'max_model_calls' } });
    expect(await providerRequests(t.model)).toHaveLength(DEFAULT_MAX_MODEL_CALLS);
    // The last reply's call is not made: no model call could read its result.
    expect(t.toolCalls()).toBe(DEFAULT_MAX_MODEL_CALLS - 1);
  });

  it('max_run_credits holds only the budget, stops the run within one call of it, and bills at most the budget and one call', async () => {
    // Each call costs 100 credits: a budget of 250 is spent after the third.
    const t = await looping({ max_run_credits: 250 }, { usage: { prompt_tokens: 90, completion_tokens: 10 } });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Look it up, forever' } });
    expect(res.body).toMatchObject({ status: 'completed', incomplete_details: { reason: 'max_run_credits' } });
    expect(await providerRequests(t.model)).toHaveLength(3);
    expect(t.toolCalls()).toBe(2);
    expect(res.body.usage.total_tokens).toBe(300);
    const ledger = await ledgerOf(res.body.id);
    expect(Number(ledger.held)).toBe(250);
    expect(Number(ledger.credits)).toBeLessThanOrEqual(250 + 100);
  });

  it('a streamed run at its limit sends one terminal event, carrying the reason', async () => {
    const t = await looping({ max_tool_calls: 1 });
    const frames = (await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'Look it up', stream: true }))).filter((f) => f.event);
    const terminal = frames.filter((f) => ['response.completed', 'response.failed', 'response.cancelled'].includes(f.event!));
    expect(terminal).toHaveLength(1);
    expect(frames.at(-1)).toBe(terminal[0]);
    expect(terminal[0]).toMatchObject({ event: 'response.completed', data: { status: 'completed', incomplete_details: { reason: 'max_tool_calls' } } });
    expect(frames.filter((f) => f.event === 'response.tool.completed')).toHaveLength(1);
  });
});

describe('a /v1 caller’s limits', () => {
  it('/v1/responses honours max_tool_calls: at most one tool call, status incomplete with the reason', async () => {
    const t = await looping(undefined, { scopes: ['responses:create'] });
    const res = await call(api.url, 'POST', '/v1/responses', { key: t.key, body: { model: t.agent, input: 'Look it up', store: false, max_tool_calls: 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_tool_calls' } });
    expect(t.toolCalls()).toBeLessThanOrEqual(1);
  });

  it('may only lower the agent’s limit: a higher max_tool_calls is the agent’s', async () => {
    const t = await looping({ max_tool_calls: 2 }, { scopes: ['responses:create'] });
    const res = await call(api.url, 'POST', '/v1/responses', { key: t.key, body: { model: t.agent, input: 'Look it up', store: false, max_tool_calls: 50 } });
    expect(res.body).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_tool_calls' } });
    expect(t.toolCalls()).toBe(2);
  });

  it('max_output_tokens and max_completion_tokens lower each call’s cap, never raise it', async () => {
    const t = await tenant({ config: { max_output_tokens: 300 } });
    await scriptModel(t.model, [{ text: 'Short.' }, { text: 'Short.' }, { text: 'Short.', truncated: true }]);
    await call(api.url, 'POST', '/v1/responses', { key: t.key, body: { model: t.agent, input: 'hi', store: false, max_output_tokens: 40 } });
    await call(api.url, 'POST', '/v1/responses', { key: t.key, body: { model: t.agent, input: 'hi', store: false, max_output_tokens: 5_000 } });
    const chat = await call(api.url, 'POST', '/v1/chat/completions', { key: t.key, body: { model: t.agent, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 60, max_tokens: 70 } });
    expect(chat.body.choices[0].finish_reason).toBe('length');
    expect((await providerRequests(t.model)).map((r) => r.body.max_tokens)).toEqual([40, 300, 60]);
  });

  it('refuses a limit that is not a positive integer with a 400 naming it', async () => {
    const t = await tenant();
    for (const [path, body, field] of [
      ['/v1/responses', { max_tool_calls: -1 }, 'max_tool_calls'],
      ['/v1/responses', { max_output_tokens: 0 }, 'max_output_tokens'],
      ['/v1/responses', { max_output_tokens: 'lots' }, 'max_output_tokens'],
      ['/v1/chat/completions', { max_tokens: 1.5 }, 'max_tokens'],
      ['/v1/chat/completions', { max_completion_tokens: 0 }, 'max_completion_tokens'],
    ] as const) {
      const input = path === '/v1/responses' ? { input: 'hi' } : { messages: [{ role: 'user', content: 'hi' }] };
      const res = await call(api.url, 'POST', path, { key: t.key, body: { model: t.agent, ...input, ...body } });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain(field);
    }
    expect(await providerRequests(t.model)).toHaveLength(0);
  });
});
