import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueryTypes } from 'sequelize';
import OpenAI from 'openai';
import { db } from '../db/sequelize';
import type { RunResponse } from '../domain/runs';
import { waitingForApprover } from '../api/openai/chatCompletions';
import { openAiErrorBody } from '../api/openai/errors';
import { call, providerRequests, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { everythingServer, type EverythingServer } from './support/mcpEverything';
import { expectOneRun, runsOf } from './support/v2Side';

/**
 * A run that waits for an approver, through the `/v1` surface and OpenAI's Node SDK: a response shows
 * the wait as `mcp_approval_request` items and is not completed, an `mcp_approval_response` continues
 * it (for an HTTP tool and an MCP server's tool alike, plain and streamed); a chat completion is held
 * until the approver decides, never answered empty meanwhile. Then the /api/v2 limits /v1 keeps too.
 */
const api = useApi();
const SCOPES = ['responses:create', 'messages:create', 'conversations:create', 'actions:approve'];
const client = (t: Tenant) => new OpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key, maxRetries: 0 });

let everything: EverythingServer;
let refunds: Server;
let refunded: string[];
let refundUrl: string;
beforeAll(async () => {
  everything = await everythingServer();
  refunds = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      refunded.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"refunded":true}');
    });
  });
  await new Promise<void>((resolve) => refunds.listen(0, '127.0.0.1', resolve));
  refundUrl = `http://127.0.0.1:${(refunds.address() as AddressInfo).port}/refund`;
});
beforeEach(() => {
  refunded = [];
});
afterAll(async () => {
  await everything?.stop();
  refunds?.close();
});

const refundTool = () => ({ type: 'http', name: 'refund', parameters: { type: 'object' }, url: refundUrl, approval: 'required' });
const sumServer = () => ({ type: 'mcp', server_label: 'everything', server_url: everything.url, allowed_tools: ['get-sum'], approval: 'required' });

type Event = { type: string; sequence_number: number; item?: Record<string, unknown>; response?: OpenAI.Responses.Response; delta?: string };
async function eventsOf(stream: AsyncIterable<unknown>): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of stream) events.push(event as Event);
  return events;
}

/** The workspace's one run, once it exists (a held request has not answered with its id yet). */
const onlyRun = (t: Tenant) =>
  until(async () => {
    const rows = await db().query<{ public_id: string }>('SELECT r.public_id FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    return rows[0]?.public_id;
  }, 'the run to be recorded');

/** The calls the run waits on, once it waits. */
const pendingCalls = (t: Tenant, runId: string) =>
  until(async () => (await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key })).body.required_action?.calls as { call_id: string; arguments_sha256: string }[] | undefined, 'the approval to be asked for');

describe('/v1/responses: a run that waits for an approver', () => {
  it("shows an HTTP tool's approval as an mcp_approval_request, in_progress (to a poller too), and an mcp_approval_response continues it to the answer", async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [refundTool()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: '{"order":"A1"}' }] }, { text: 'Refunded A1.' }]);
    const openai = client(t);
    const waiting = await openai.responses.create({ model: t.agent, input: 'Refund A1.' });
    expect(waiting).toMatchObject({ id: expect.stringMatching(/^run_/), status: 'in_progress', output_text: '' });
    expect(waiting.output).toEqual([{ type: 'mcp_approval_request', id: expect.stringMatching(/^mcpr_run_/), name: 'refund', arguments: '{"order":"A1"}', server_label: t.agent }]);
    // A background poller reads the same: not done.
    expect(await openai.responses.retrieve(waiting.id)).toMatchObject({ status: 'in_progress', output: waiting.output });
    expect(refunded).toEqual([]);

    const request = waiting.output[0] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    const answered = await openai.responses.create({ model: t.agent, previous_response_id: waiting.id, input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }] });
    expect(answered).toMatchObject({ id: waiting.id, status: 'completed', output_text: 'Refunded A1.' });
    expect(refunded).toEqual(['{"order":"A1"}']);
    expect((await openai.responses.retrieve(waiting.id)).status).toBe('completed');
    await expectOneRun(api.url, t, waiting.id, 'message');
  });

  it("streams an MCP server's approval request, ends the stream in_progress, and streams the answer to an approval response; a denial is told to the model", async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [sumServer()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__get-sum', arguments: '{"a":4,"b":5}' }] }, { chunks: ['It is ', 'nine.'] }, { toolCalls: [{ name: 'everything__get-sum', arguments: '{"a":1,"b":1}' }] }, { text: 'Not allowed.' }]);
    const openai = client(t);
    const first = await eventsOf(await openai.responses.create({ model: t.agent, input: 'Add 4 and 5.', stream: true }));
    expect(first.map((e) => e.sequence_number)).toEqual(first.map((_, i) => i));
    const request = { type: 'mcp_approval_request', id: expect.stringMatching(/^mcpr_run_/), name: 'get-sum', arguments: '{"a":4,"b":5}', server_label: 'everything' };
    expect(first.filter((e) => e.type === 'response.output_item.done').map((e) => e.item)).toEqual([request]);
    const last = first.at(-1)!;
    expect(last).toMatchObject({ type: 'response.in_progress', response: { status: 'in_progress', output: [request] } });
    const responseId = last.response!.id;

    const approvalId = (last.response!.output[0] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest).id;
    const second = await eventsOf(await openai.responses.create({ model: t.agent, previous_response_id: responseId, input: [{ type: 'mcp_approval_response', approval_request_id: approvalId, approve: true }], stream: true }));
    expect(second.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')).toBe('It is nine.');
    expect(second.at(-1)).toMatchObject({ type: 'response.completed', response: { id: responseId, status: 'completed', output_text: 'It is nine.' } });
    const told = (await providerRequests(t.model))[1].body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(told.map((m: { content: string }) => m.content)).toEqual(['The sum of 4 and 5 is 9.']);

    // The next turn waits again, and is denied, plain: the model is told, and answers.
    const next = await openai.responses.create({ model: t.agent, previous_response_id: responseId, input: 'Add 1 and 1.' });
    expect(next).toMatchObject({ status: 'in_progress', output: [{ type: 'mcp_approval_request', name: 'get-sum', server_label: 'everything' }] });
    const denied = await openai.responses.create({
      model: t.agent,
      previous_response_id: next.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: (next.output[0] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest).id, approve: false, reason: 'Not today.' }],
    });
    expect(denied).toMatchObject({ id: next.id, status: 'completed', output_text: 'Not allowed.' });
    expect((await providerRequests(t.model))[3].body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'The call was not made: a person denied it: Not today.' });
  });

  it('refuses an approval response without its response, or for arguments other than those shown', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [refundTool()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: '{"order":"A1"}' }] }, { text: 'Refunded.' }]);
    const openai = client(t);
    const waiting = await openai.responses.create({ model: t.agent, input: 'Refund A1.' });
    const id = (waiting.output[0] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest).id;
    const approve = (approval_request_id: string, previous_response_id?: string) => openai.responses.create({ model: t.agent, ...(previous_response_id && { previous_response_id }), input: [{ type: 'mcp_approval_response', approval_request_id, approve: true }] });
    await expect(approve(id)).rejects.toMatchObject({ status: 400, code: 'invalid_request', param: 'previous_response_id' });
    await expect(approve('mcpr_nothing', waiting.id)).rejects.toMatchObject({ status: 400, param: 'input' });
    // Another hash than the arguments shown approves nothing.
    await expect(approve(id.replace(/\.[0-9a-f]{64}$/, `.${'0'.repeat(64)}`), waiting.id)).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refunded).toEqual([]);
    expect(await approve(id, waiting.id)).toMatchObject({ status: 'completed', output_text: 'Refunded.' });
    expect(await runsOf(t)).toBe(1);
  });
});

describe('/v1/chat/completions: a run that waits for an approver', () => {
  it('holds the request until the approver decides, then answers with the run (never an empty answer meanwhile)', async () => {
    const t = await tenant({ scopes: SCOPES, config: { tools: [refundTool()] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: '{"order":"A1"}' }] }, { text: 'Refunded A1.' }]);
    let settled = false;
    const asked = client(t)
      .chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'Refund A1.' }] })
      .finally(() => (settled = true));
    const runId = await onlyRun(t);
    const [pending] = await pendingCalls(t, runId);
    expect(settled).toBe(false);
    const approved = await call(api.url, 'POST', `/api/v2/runs/${runId}/actions`, { key: t.key, body: { call_id: pending.call_id, decision: 'approve', arguments_sha256: pending.arguments_sha256 } });
    expect(approved.status).toBe(200);
    const completion = await asked;
    expect(completion).toMatchObject({ id: runId, choices: [{ message: { content: 'Refunded A1.' }, finish_reason: 'stop' }] });
    expect(refunded).toEqual(['{"order":"A1"}']);
    await expectOneRun(api.url, t, runId);
  });

  it('answers a run still waiting when the hold ends as an error in OpenAI\'s shape naming the run, which the SDKs do not retry', () => {
    const run = { id: 'run_01waiting', required_action: { calls: [{ call_id: 'call_0', type: 'approval', tool: 'refund', expires_at: '' }], submit_to: '' } } as unknown as RunResponse;
    const error = waitingForApprover(run);
    expect(error).toMatchObject({ code: 'action_required', httpStatus: 409, headers: { 'x-should-retry': 'false' } });
    expect(openAiErrorBody(error).error).toMatchObject({ type: 'invalid_request_error', code: 'action_required', message: expect.stringContaining('Run run_01waiting waits for an approver') });
  });
});

describe('/v1 keeps the limits of /api/v2', () => {
  const big = 'x'.repeat(16 * 1024 + 1);

  it("caps a tool's output sent back at 16 KiB, as a tool message or a function call output, continuing a run or in a history", async () => {
    const lookup = { type: 'http', name: 'lookup', parameters: { type: 'object' }, runs_on: 'client' };
    const t = await tenant({ scopes: SCOPES, config: { tools: [lookup] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup', arguments: '{}' }] }, { text: 'Looked up.' }, { toolCalls: [{ name: 'lookup', arguments: '{}' }] }, { text: 'Found.' }]);
    const openai = client(t);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Look it up.' }];
    const first = await openai.chat.completions.create({ model: t.agent, messages });
    const callId = first.choices[0].message.tool_calls![0].id;
    const answered = (output: string): OpenAI.ChatCompletionMessageParam[] => [...messages, first.choices[0].message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: callId, content: output }];
    await expect(openai.chat.completions.create({ model: t.agent, messages: answered(big) })).rejects.toMatchObject({ status: 400, code: 'invalid_request', param: 'messages' });
    // In a stateless history too.
    await expect(openai.chat.completions.create({ model: t.agent, messages: [...answered(big), { role: 'user', content: 'And?' }] })).rejects.toMatchObject({ status: 400, param: 'messages' });
    // The run still waits, and takes an output within the cap.
    expect((await openai.chat.completions.create({ model: t.agent, messages: answered('x'.repeat(16 * 1024)) })).choices[0].message.content).toBe('Looked up.');

    const waiting = await openai.responses.create({ model: t.agent, input: 'Look it up.', store: false });
    const fc = waiting.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    await expect(openai.responses.create({ model: t.agent, store: false, input: [{ type: 'function_call_output', call_id: fc.call_id, output: big }] })).rejects.toMatchObject({ status: 400, code: 'invalid_request', param: 'input' });
    expect((await openai.responses.create({ model: t.agent, store: false, input: [{ type: 'function_call_output', call_id: fc.call_id, output: 'short' }] })).output_text).toBe('Found.');
  });

  it('opens a stored response\'s conversation only with conversations:create; continuing one needs no more than before', async () => {
    const creator = await tenant({ scopes: SCOPES });
    await scriptModel(creator.model, [{ text: 'Hello.' }]);
    const opened = await client(creator).responses.create({ model: creator.agent, input: 'hi' });
    expect(opened.conversation?.id).toMatch(/^conv_/);

    const t = await tenant({ scopes: ['responses:create', 'messages:create'] });
    const refused = client(t).responses.create({ model: t.agent, input: 'hi' });
    await expect(refused).rejects.toMatchObject({ status: 403, code: 'permission_denied', type: 'permission_error' });
    await expect(refused).rejects.toThrow(/conversations:create/);
    expect(await runsOf(t)).toBe(0);
    // Stateless, it opens nothing.
    await scriptModel(t.model, [{ text: 'Stateless.' }, { text: 'Next.' }]);
    expect((await client(t).responses.create({ model: t.agent, input: 'hi', store: false })).output_text).toBe('Stateless.');
    // A conversation opened by another key of the workspace is continued with messages:create alone.
    const opener = await call(api.url, 'POST', '/api/v2/conversations', { key: (await tenantKeyWith(t, ['conversations:create'])), body: { agent: t.agent } });
    expect(opener.status).toBe(201);
    expect((await client(t).responses.create({ model: t.agent, input: 'hi', conversation: opener.body.id })).output_text).toBe('Next.');
  });
});

/** Another key of the tenant's workspace, with these scopes. */
async function tenantKeyWith(t: Tenant, scopes: string[]): Promise<string> {
  const admin = await import('../admin/commands');
  return (await admin.createWorkspaceKey({ workspace: t.workspace, scopes: scopes.join(',') })).key;
}
