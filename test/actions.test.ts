import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { redis } from '../infra/redis';
import { RunEvents } from '../activities/runEvents';
import { RUN_EVENTS_TTL_S, runEventsKey } from '../domain/streamEvents';
import { openRunsOlderThan } from '../db/runs';
import { parseAgentConfig } from '../contract/agentConfig';
import { costInputOf, heldWhileWaiting, maxRunCost } from '../domain/billing';
import { runLimits } from '../domain/limits';
import { config as serviceConfig } from '../infra/config';
import { dataConverter } from '../infra/payloadCodec';
import { startRun } from '../workflowClients/agentRun.client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { requireActions } from '../activities/actions';
import { createWorkspaceKey } from '../admin/commands';
import { startWorkers, type RunningWorkers } from '../workers/worker';
import { type Answer, call, providerRequests, runInputFor, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { frames, openStream, type Frame } from './support/sse';

const api = useApi();
let client: Client;
let toolServer: Server;
let toolUrl = '';
/** The tool endpoint's requests: a call is made only once it is approved. */
const received: string[] = [];
const workers: RunningWorkers[] = [];

beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
  toolServer = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"refunded":true}');
    });
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/refunds`;
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.shutdown()));
  toolServer.close();
  await client.connection.close();
});

const refundTool = (extra: Record<string, unknown> = {}) => ({
  tools: [{ type: 'http', name: 'refund', description: 'Refund an order', parameters: { type: 'object', properties: { order: { type: 'string' } } }, url: toolUrl, approval: 'required' }],
  ...extra,
});
const locationTool = { tools: [{ type: 'http', name: 'get_location', description: "The user's location", parameters: { type: 'object', properties: { precision: { type: 'string' } } }, runs_on: 'client' }] };
const refund = (order: string) => ({ name: 'refund', arguments: JSON.stringify({ order }) });

const respond = (t: Tenant, input: string) => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input } });
const answer = (t: Tenant, runId: string, body: Record<string, unknown>) => call(api.url, 'POST', `/api/v2/runs/${runId}/actions`, { key: t.key, body });
/** Approving names the arguments approved: those of the refund of `order`. */
const approval = (order: string) => ({ call_id: 'call_0', decision: 'approve', arguments_sha256: createHash('sha256').update(refund(order).arguments).digest('hex') });
const readRun = async (t: Tenant, runId: string) => (await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key })).body;
/** The run once settled (a stateless run's output is not kept: the model's requests show what it was told). */
const settled = (t: Tenant, runId: string) =>
  until(async () => {
    const run = await readRun(t, runId);
    return run.status === 'running' || run.status === 'queued' ? undefined : run;
  }, `run ${runId} to settle`);
/** What the model was told of each tool call, in its second request. */
const toolResults = async (t: Tenant) => ((await providerRequests(t.model))[1].body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
/** The answers the run's workflow accepted (its history's accepted updates). */
const acceptedUpdates = async (runId: string) => ((await client.workflow.getHandle(runId).fetchHistory()).events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
const receivedFor = (order: string) => received.filter((body) => JSON.parse(body).order === order);

describe('tool calls that wait for people', () => {
  it('approve: a non-streamed request answers 202 once the run waits, holding only what its next calls need; the approved call is made and its answer reaches the model', async () => {
    const order = randomUUID();
    const t = await tenant({ config: refundTool(), listened: true });
    await scriptModel(t.model, [{ toolCalls: [refund(order)], usage: { prompt_tokens: 40, completion_tokens: 10 } }, { text: 'Refunded.' }]);
    const first = await respond(t, 'Refund my order');
    expect(first.status).toBe(202);
    const runId = first.body.id as string;
    expect(first.headers.get('location')).toBe(`/api/v2/runs/${runId}`);
    // The approver sees what it approves: the arguments, and their hash to approve them by. Nothing was called yet.
    const args = refund(order).arguments;
    const sha256 = createHash('sha256').update(args).digest('hex');
    expect(first.body).toMatchObject({ status: 'running', required_action: { calls: [{ call_id: 'call_0', type: 'approval', tool: 'refund', arguments: args, arguments_sha256: sha256, expires_at: expect.any(String) }], submit_to: `/api/v2/runs/${runId}/actions` } });
    expect(receivedFor(order)).toEqual([]);
    expect((await readRun(t, runId)).required_action).toEqual(first.body.required_action);

    // The hold while it waits: what the first call consumed, and the most its remaining calls may cost (less than the whole hold).
    const config = parseAgentConfig({ model: t.model, ...refundTool() });
    const cost = costInputOf({ config, kind: 'response', input: 'Refund my order', attachments: [], options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60000, responseFormat: { type: 'text' } }, limits: runLimits(undefined, serviceConfig().runLimits) });
    const [held] = await db().query<{ credits: string }>('SELECT credits FROM credit_reservations WHERE run_public_id = :runId', { replacements: { runId }, type: QueryTypes.SELECT });
    expect(Number(held.credits)).toBe(heldWhileWaiting(cost, 1, 50));
    expect(Number(held.credits)).toBeLessThan(maxRunCost(cost));

    // The partner hears of it, without the model's arguments.
    const [event] = await db().query<{ envelope: { data: { object: Record<string, unknown> } } }>(
      "SELECT envelope FROM outbox_events WHERE type = 'agent.run.action_required' AND envelope->'data'->'object'->>'id' = :runId",
      { replacements: { runId }, type: QueryTypes.SELECT },
    );
    expect(event.envelope.data.object).toEqual({ id: runId, agent: t.agent, agent_version: 1, status: 'running', required_action: { calls: [{ call_id: 'call_0', type: 'approval', tool: 'refund', arguments_sha256: sha256, expires_at: expect.any(String) }], submit_to: `/api/v2/runs/${runId}/actions` } });

    // The reconciler leaves it to its workflow while it waits: it is not among the open runs it describes.
    const [{ key }] = await db().query<{ key: string }>('SELECT id AS key FROM runs WHERE public_id = :runId', { replacements: { runId }, type: QueryTypes.SELECT });
    expect((await openRunsOlderThan(0, Number(key) - 1, 1000)).map((r) => r.runId)).not.toContain(runId);

    // The run's own validator refuses what it does not wait for, before it reaches history.
    const handle = client.workflow.getHandle(runId);
    await expect(handle.executeUpdate('answerAction', { args: [{ call_id: 'call_9', decision: 'approve' }] })).rejects.toThrow(WorkflowUpdateFailedError);
    await expect(handle.executeUpdate('answerAction', { args: [{ call_id: 'call_0', output: 'done' }] })).rejects.toThrow(WorkflowUpdateFailedError);

    // A decision approves exactly the arguments it names: none, or others, are refused and change nothing.
    const unbound = await answer(t, runId, { call_id: 'call_0', decision: 'approve' });
    expect([unbound.status, unbound.body.error.message]).toEqual([400, expect.stringContaining(sha256)]);
    const other = await answer(t, runId, { call_id: 'call_0', decision: 'approve', arguments_sha256: createHash('sha256').update('{"amount":5000}').digest('hex') });
    expect([other.status, other.body.error.message]).toEqual([400, expect.stringMatching(/read the run again/)]);
    expect(await acceptedUpdates(runId)).toBe(0);

    const approved = await answer(t, runId, { call_id: 'call_0', decision: 'approve', arguments_sha256: sha256 });
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ object: 'run.action', run: runId, call_id: 'call_0', type: 'approval', tool: 'refund', status: 'approved', answered_at: expect.any(String) });
    const run = await settled(t, runId);
    expect(run.status).toBe('completed');
    expect(run.required_action).toBeUndefined();
    expect(receivedFor(order)).toHaveLength(1);
    expect(await toolResults(t)).toEqual(['{"refunded":true}']);
    expect(await acceptedUpdates(runId)).toBe(1);
    // Answered again after the run ended, whatever it says: the first answer's outcome.
    expect((await answer(t, runId, { call_id: 'call_0', decision: 'deny' })).body).toEqual(approved.body);
  });

  it('two answers to one call: one wins and the other gets its outcome; a denial is told to the model and nothing is called', async () => {
    const order = randomUUID();
    const t = await tenant({ config: refundTool() });
    await scriptModel(t.model, [{ toolCalls: [refund(order)] }, { text: 'I could not refund it.' }]);
    const runId = (await respond(t, 'Refund my order')).body.id as string;

    // Refused before they reach the run: an unknown call, the wrong kind of answer, both kinds at once.
    expect((await answer(t, runId, { call_id: 'call_9', decision: 'approve' })).body.error.code).toBe('action_not_found');
    expect((await answer(t, runId, { call_id: 'call_0', output: 'done' })).status).toBe(400);
    expect((await answer(t, runId, { call_id: 'call_0', decision: 'approve', output: 'done' })).status).toBe(400);
    const stranger = await tenant();
    expect((await answer(stranger, runId, { call_id: 'call_0', decision: 'approve' })).body.error.code).toBe('run_not_found');

    const [a, b] = await Promise.all([answer(t, runId, { call_id: 'call_0', decision: 'deny', reason: 'over the limit' }), answer(t, runId, approval(order))]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body).toEqual(a.body);
    await settled(t, runId);
    expect(await acceptedUpdates(runId)).toBe(1);
    if (a.body.status === 'denied') {
      expect(a.body.reason).toBe('over the limit');
      expect(receivedFor(order)).toEqual([]);
      expect(await toolResults(t)).toEqual(['The call was not made: a person denied it: over the limit']);
    } else {
      expect(a.body.status).toBe('approved');
      expect(receivedFor(order)).toHaveLength(1);
    }
  });

  it('a call no one answers is denied at the agent’s deadline, the model is told, and a late answer is 409', async () => {
    const order = randomUUID();
    const t = await tenant({ config: refundTool({ action_timeout_seconds: 1 }) });
    await scriptModel(t.model, [{ toolCalls: [refund(order)] }, { text: 'No one approved it.' }]);
    const runId = (await respond(t, 'Refund my order')).body.id as string;
    expect((await settled(t, runId)).status).toBe('completed');
    expect(await toolResults(t)).toEqual(['The call was not made: no one answered in time, so it was denied.']);
    expect(receivedFor(order)).toEqual([]);
    const late = await answer(t, runId, { call_id: 'call_0', decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('action_not_pending');
  });

  it('recording the calls that wait fails the run at once when the database refuses what it writes (a data error), rather than retrying', async () => {
    const input = await runInputFor(await tenant());
    // A round PostgreSQL cannot take (past its integer, SQLSTATE 22003): written again, it is refused again.
    const calls = { input, round: 2 ** 40, calls: [{ call_id: 'call_0', type: 'approval' as const, tool: 'refund', arguments: '{}', expires_at: new Date().toISOString() }], callsMade: 1, consumed: 0 };
    const first = await new MockActivityEnvironment({ attempt: 1 }).run(requireActions, calls).catch((err: unknown) => err);
    expect(first).toBeInstanceOf(ApplicationFailure);
    expect(first).toMatchObject({ type: 'internal_error', nonRetryable: true });
  });

  it('an answer after a call’s expires_at is 409, even while the run has not closed the call yet (a lagging worker)', async () => {
    const order = randomUUID();
    const t = await tenant({ config: refundTool() });
    await scriptModel(t.model, [{ toolCalls: [refund(order)] }, { text: 'Refunded.' }]);
    const runId = (await respond(t, 'Refund my order')).body.id as string;
    // The deadline has passed, as the record says; the run's own timer (a day) has not fired.
    await db().query("UPDATE run_actions SET expires_at = now() - interval '1 second' WHERE call_id = 'call_0' AND run_id = (SELECT id FROM runs WHERE public_id = :runId)", { replacements: { runId } });
    const late = await answer(t, runId, approval(order));
    expect([late.status, late.body.error.code]).toEqual([409, 'action_not_pending']);
    expect(await acceptedUpdates(runId)).toBe(0);
    expect(receivedFor(order)).toEqual([]);
    await call(api.url, 'POST', `/api/v2/runs/${runId}/cancel`, { key: t.key });
  });

  it('a client tool: the stream announces the call with its arguments and stays open; its client goes away, resumes with Last-Event-ID, and the output reaches the model', async () => {
    const t = await tenant({ config: locationTool });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'get_location', arguments: '{"precision":"city"}' }] }, { chunks: ['You are in ', 'Paris.'] }]);
    const gone = new AbortController();
    const stream = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'Where am I?', stream: true }, {}, gone.signal);
    let action: Frame | undefined;
    for await (const frame of frames(stream)) {
      if (frame.event !== 'response.tool.action_required') continue;
      action = frame;
      break;
    }
    const runId = action!.data.id as string;
    expect(action!.data).toEqual({ id: runId, call_id: 'call_0', type: 'client_tool', tool: 'get_location', arguments: '{"precision":"city"}', arguments_sha256: createHash('sha256').update('{"precision":"city"}').digest('hex'), expires_at: expect.any(String), submit_to: `/api/v2/runs/${runId}/actions` });
    gone.abort();

    // Going away while the run waits did not cancel it.
    const waiting = await readRun(t, runId);
    expect(waiting).toMatchObject({ status: 'running', required_action: { calls: [{ call_id: 'call_0', type: 'client_tool', arguments: '{"precision":"city"}' }] } });
    const resumed = await openStream(api.url, `/api/v2/runs/${runId}/events`, t.key, undefined, { 'Last-Event-ID': action!.id! });
    const answered = await answer(t, runId, { call_id: 'call_0', output: 'Paris, France' });
    expect(answered.body).toMatchObject({ status: 'answered', type: 'client_tool' });
    const rest: Frame[] = [];
    for await (const frame of frames(resumed)) if (frame.event) rest.push(frame);
    expect(rest.map((f) => f.event)).toEqual(['response.tool.completed', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    expect(rest.at(-1)!.data.output).toEqual([{ type: 'text', text: 'You are in Paris.' }]);
    expect(await toolResults(t)).toEqual(['Paris, France']);
  });

  it('a stream kept for a long wait is not shortened by the steps that write to it later', async () => {
    const runId = `run_${randomUUID()}`;
    const waiting = new RunEvents(runId);
    waiting.emit('response.started', {});
    waiting.expireIn(3 * RUN_EVENTS_TTL_S);
    await waiting.flush();
    const later = new RunEvents(runId);
    later.emit('response.tool.completed', {});
    await later.flush();
    expect(await redis().ttl(runEventsKey(runId))).toBeGreaterThan(2 * RUN_EVENTS_TTL_S);
    // A new stream gets its usual life.
    const freshId = `run_${randomUUID()}`;
    const fresh = new RunEvents(freshId);
    fresh.emit('response.started', {});
    await fresh.flush();
    const ttl = await redis().ttl(runEventsKey(freshId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(RUN_EVENTS_TTL_S);
  });

  it('a run cancelled while it waits: its calls close with it (their arguments go), and an answer is 409', async () => {
    const t = await tenant({ config: locationTool });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'get_location', arguments: '{"precision":"street"}' }] }]);
    const runId = (await respond(t, 'Where am I?')).body.id as string;
    const cancelled = await call(api.url, 'POST', `/api/v2/runs/${runId}/cancel`, { key: t.key });
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.required_action).toBeUndefined();
    const [row] = await db().query<{ status: string; arguments: string | null }>(
      'SELECT a.status, a.arguments FROM run_actions a JOIN runs r ON r.id = a.run_id WHERE r.public_id = :runId',
      { replacements: { runId }, type: QueryTypes.SELECT },
    );
    expect(row).toEqual({ status: 'cancelled', arguments: null });
    const late = await answer(t, runId, { call_id: 'call_0', output: 'somewhere' });
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: 'action_not_pending', message: expect.stringContaining('cancelled while it waited') });
  });

  it('a worker restart while the run waits: the new worker takes the run up where it waited, and the answer reaches it', async () => {
    const order = randomUUID();
    const queue = `actions-${randomUUID()}`;
    const t = await tenant({ config: refundTool() });
    await scriptModel(t.model, [{ toolCalls: [refund(order)] }, { text: 'Refunded after the restart.' }]);
    const input = await runInputFor(t);
    input.agent.config = parseAgentConfig({ model: t.model, ...refundTool() });
    const first = await startWorkers([queue]);
    await startRun(client, input, { taskQueue: queue });
    await until(async () => (await readRun(t, input.runId)).required_action, 'the run to wait');
    await first.shutdown();
    workers.push(await startWorkers([queue]));
    const approved: Answer = await answer(t, input.runId, approval(order));
    expect(approved.body.status).toBe('approved');
    expect((await settled(t, input.runId)).status).toBe('completed');
    expect(await toolResults(t)).toEqual(['{"refunded":true}']);
    expect(receivedFor(order)).toHaveLength(1);
  });

  it('actions:approve: a key that cannot run agents reads the run and decides on its approvals, and nothing else', async () => {
    const order = randomUUID();
    const t = await tenant({ config: refundTool() });
    await scriptModel(t.model, [{ toolCalls: [refund(order)] }, { text: 'Refunded.' }]);
    const runId = (await respond(t, 'Refund my order')).body.id as string;
    const approver = { ...t, key: (await createWorkspaceKey({ workspace: t.workspace, scopes: 'actions:approve' })).key };

    expect((await readRun(approver, runId)).required_action.calls[0]).toMatchObject({ tool: 'refund', arguments: refund(order).arguments });
    expect((await respond(approver, 'Refund another')).status).toBe(403);
    expect((await answer(approver, runId, { call_id: 'call_0', output: 'done' })).body.error.code).toBe('permission_denied');
    expect((await answer(approver, runId, approval(order))).body.status).toBe('approved');
    expect((await settled(t, runId)).status).toBe('completed');
    expect(receivedFor(order)).toHaveLength(1);
  });

  it('arguments with a NUL or a lone surrogate are shown, recorded and called as the same text, and the run goes on', async () => {
    const t = await tenant({ config: refundTool() });
    const order = randomUUID();
    const raw = JSON.stringify({ order }).replace('}', ',"note":"a\u0000b\ud800c"}');
    await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: raw }] }, { text: 'Refunded.' }]);
    const first = await respond(t, 'Refund my order');
    expect(first.status).toBe(202);
    const [pending] = first.body.required_action.calls;
    expect(pending.arguments).toBe(raw.replace('\u0000', '\uFFFD').replace('\ud800', '\uFFFD'));
    expect((await answer(t, first.body.id, { call_id: 'call_0', decision: 'approve', arguments_sha256: pending.arguments_sha256 })).body.status).toBe('approved');
    expect((await settled(t, first.body.id)).status).toBe('completed');
    expect(receivedFor(order)).toHaveLength(1);
  });

  it('two calls of one reply that share an id (both call_1) each get an id and an approval of their own: approving the first runs it alone, and the provider hears its own ids', async () => {
    const [first, second] = [randomUUID(), randomUUID()];
    const sha = (order: string) => createHash('sha256').update(refund(order).arguments).digest('hex');
    const t = await tenant({ config: refundTool() });
    await scriptModel(t.model, [{ toolCalls: [{ ...refund(first), id: 'call_1' }, { ...refund(second), id: 'call_1' }] }, { text: 'Refunded one.' }]);
    const started = await respond(t, 'Refund both');
    expect(started.status).toBe(202);
    const runId = started.body.id as string;
    expect(started.body.required_action.calls.map((c: { call_id: string; arguments: string }) => [c.call_id, c.arguments])).toEqual([
      ['call_1_1', refund(first).arguments],
      ['call_1_2', refund(second).arguments],
    ]);

    // The run's own validator checks the round and the arguments approved, whoever sends the answer.
    const handle = client.workflow.getHandle(runId);
    const update = (answer: Record<string, unknown>) => handle.executeUpdate('answerAction', { args: [answer] });
    await expect(update({ call_id: 'call_1_1', round: 0, decision: 'approve', arguments_sha256: sha(second) })).rejects.toThrow(WorkflowUpdateFailedError);
    await expect(update({ call_id: 'call_1_1', round: 1, decision: 'approve', arguments_sha256: sha(first) })).rejects.toThrow(WorkflowUpdateFailedError);
    expect(await acceptedUpdates(runId)).toBe(0);

    // The first approved: the second still waits on its own decision, and neither is called yet.
    expect((await answer(t, runId, { call_id: 'call_1_1', decision: 'approve', arguments_sha256: sha(first) })).body.status).toBe('approved');
    expect((await readRun(t, runId)).required_action.calls.map((c: { call_id: string }) => c.call_id)).toEqual(['call_1_2']);
    expect([receivedFor(first), receivedFor(second)]).toEqual([[], []]);
    expect((await answer(t, runId, { call_id: 'call_1_2', decision: 'deny' })).body.status).toBe('denied');
    expect((await settled(t, runId)).status).toBe('completed');
    expect([receivedFor(first).length, receivedFor(second).length]).toEqual([1, 0]);

    // The provider is sent back its own ids: both calls, and both results, under call_1, in its order.
    const messages = (await providerRequests(t.model))[1].body.messages as { role: string; content: string; tool_call_id?: string; tool_calls?: { id: string }[] }[];
    expect(messages.find((m) => m.role === 'assistant')!.tool_calls!.map((c) => c.id)).toEqual(['call_1', 'call_1']);
    expect(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content])).toEqual([
      ['call_1', '{"refunded":true}'],
      ['call_1', expect.stringContaining('denied')],
    ]);
  });
});
