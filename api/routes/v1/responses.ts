import Router from '@koa/router';
import type { Context } from 'koa';
import { invalidRequest, ServiceError } from '../../../domain/errors';
import { mintTraceId } from '../../../domain/ids';
import type { RunResponse } from '../../../domain/runs';
import { findAgentInWorkspace } from '../../../db/agents';
import { findPublicConversation, openConversation, type ConversationRecord } from '../../../db/conversations';
import { Outbox } from '../../../db/outbox';
import { findRun } from '../../../db/runs';
import type { Sql } from '../../../db/sql';
import { temporal } from '../../../infra/temporalClient';
import { runHandle } from '../../../workflowClients/agentRun.client';
import { cancelAndShow } from '../../../runs/cancelRun';
import { continueRun, execute } from '../../execution/execution';
import { requireScope } from '../../middleware/credentials';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import { responseFormatOf, V1_TIMEOUT_MS } from '../../openai/chatCompletions';
import { agentOfModel } from '../../openai/models';
import { checkDeclaredTools } from '../../openai/declaredTools';
import { callAnswersOf, responseEvents, responseExchange, responseObject } from '../../openai/responses';
import { runAsItStands } from '../../../runs/asItStands';
import type { AppState } from '../../middleware/state';
import { streamRunEvents } from '../../execution/eventStream';
import { notFound } from '../../../callers/tenancy';
import { CancelResponse, CreateResponseV1, RetrieveResponse, type ResponseBody } from './schema';

type Ctx = Context & { state: AppState };

/**
 * The conversation a stored response continues: the one of `previous_response_id`'s run, or the one
 * `conversation` names; none for the first turn of a new one.
 */
async function conversationFor(ctx: Ctx, body: ResponseBody): Promise<ConversationRecord | undefined> {
  const workspace = workspaceOf(ctx.state.principal);
  if (body.previous_response_id) {
    const previous = await findRun(workspace.id, body.previous_response_id);
    const conversation = previous?.conversation && !previous.internal ? await findPublicConversation(workspace.id, previous.conversation) : undefined;
    if (!conversation) throw new ServiceError('run_not_found', `No stored response ${body.previous_response_id} to continue (one with store: false cannot be).`, {}, 'previous_response_id');
    return conversation;
  }
  const named = typeof body.conversation === 'string' ? body.conversation : body.conversation?.id;
  if (named) {
    const conversation = await findPublicConversation(workspace.id, named);
    if (!conversation) throw notFound('conversation_not_found');
    return conversation;
  }
  return undefined;
}

/** Opens the conversation of a stored response's first turn, in the transaction that holds the run's credits (runs/planRun.ts). */
function opensConversation(ctx: Ctx, agentPublicId: string) {
  const workspace = workspaceOf(ctx.state.principal);
  // Now, before the run is planned, so the run and its conversation's event carry the same trace.
  const traceId = (ctx.state.traceId ??= mintTraceId());
  return async (tx: Sql) => {
    const agent = await findAgentInWorkspace(workspace.id, agentPublicId, tx);
    if (!agent) throw notFound('agent_not_found');
    const outbox = new Outbox(workspace, { requestId: ctx.state.requestId, traceId });
    const { conversation } = await openConversation({ workspace, agent, channel: 'api', externalRef: undefined }, outbox, tx);
    await outbox.write(tx);
    return conversation;
  };
}

/** The run's answer as a response object; one waiting on people shows the calls it waits on (function calls, approval requests). */
function answerAsResponse(ctx: Ctx, shown: Parameters<typeof responseObject>[1]): void {
  if (ctx.status === 200 || (ctx.status === 202 && (ctx.body as RunResponse).required_action)) {
    ctx.status = 200;
    ctx.body = responseObject(ctx.body as RunResponse, shown);
  }
}

/** POST /v1/responses, GET /v1/responses/{id} (its stream with `stream=true`), POST /v1/responses/{id}/cancel. */
export function responsesV1Routes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateResponseV1> }>(
    '/v1/responses',
    validate(CreateResponseV1),
    authorize({ scopes: ['responses:create'], endpoint: 'v1_responses', agent: (ctx) => ctx.state.input.body.model, endUser: (ctx) => ctx.state.input.body.user }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const agentPublicId = await agentOfModel(workspace.id, body.model);
      await checkDeclaredTools(workspace.id, agentPublicId, (body.tools ?? []).map((t) => t.name));
      const store = body.store !== false;
      const background = body.background === true;
      const shown = { model: body.model, store, background, previousResponseId: body.previous_response_id ?? null };
      // Function call outputs and approval responses for calls the service gave out continue that run:
      // the caller ran the agent's client-run tools, or decided on its approvals.
      const stream = body.stream === true;
      const answered = callAnswersOf(body);
      if (answered) {
        const wire = stream ? responseEvents({ runId: () => answered.runId, ...shown, structured: false }) : undefined;
        await continueRun(ctx, answered.runId, answered.answers, { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream, timeoutMs: V1_TIMEOUT_MS, responseFormat: { type: 'text' } }, { wire });
        if (!wire) answerAsResponse(ctx, shown);
        return;
      }
      if (background && !store) throw invalidRequest('background needs store: a response run in the background is read back afterwards.', 'background');
      // A stored response is a turn of a conversation: its exchange is kept, as messages are.
      if (store) requireScope(ctx.state.principal!, ['messages:create']);
      const continuing = Boolean(body.previous_response_id || body.conversation);
      const { input, exchange } = responseExchange(body, continuing);
      const format = responseFormatOf(body.text?.format ? { type: body.text.format.type, json_schema: body.text.format } : undefined);
      const request = {
        externalRef: body.user,
        input,
        attachments: [],
        channel: 'api' as const,
        metadata: body.metadata ?? {},
        requestContext: {},
        exchange,
        options: { knowledgePolicy: 'auto' as const, memoryPolicy: store ? ('auto' as const) : ('none' as const), toolPolicy: 'auto' as const, preview: false, stream, timeoutMs: V1_TIMEOUT_MS, responseFormat: format },
        // Each only lowers the agent's own limit (docs/api.md, "Budgets and limits").
        callerLimits: { ...(typeof body.max_tool_calls === 'number' && { max_tool_calls: body.max_tool_calls }), ...(typeof body.max_output_tokens === 'number' && { max_output_tokens: body.max_output_tokens }) },
      };
      const conversation = store ? await conversationFor(ctx, body) : undefined;
      // Opening one is creating a conversation, as POST /api/v2/conversations is.
      if (store && !conversation) requireScope(ctx.state.principal!, ['conversations:create']);
      if (conversation && conversation.agentPublicId !== agentPublicId) throw invalidRequest(`model: the conversation continued is ${conversation.agentPublicId ?? 'no agent'}'s; a different agent is refused.`, 'model');
      const target = !store
        ? { kind: 'response' as const, agentPublicId }
        : { kind: 'message' as const, agentPublicId, concurrency: 'enqueue' as const, ...(conversation ? { conversation } : { opensConversation: opensConversation(ctx, agentPublicId) }) };
      const wire = stream ? responseEvents({ runId: () => ctx.state.runId ?? '', model: body.model, store, background, structured: format.type !== 'text' }) : undefined;
      await execute(ctx, request, target, { wire, background });
      if (!stream) answerAsResponse(ctx, shown);
    },
  );

  router.get<{ input: Input<typeof RetrieveResponse> }>(
    '/v1/responses/:response_id',
    validate(RetrieveResponse),
    authorize({ scopes: ['responses:create'], endpoint: 'v1_responses_read' }),
    async (ctx) => {
      const { params, query } = ctx.state.input;
      const run = await runAsItStands(ctx.state.principal!, params.response_id);
      const shown = { model: run.agent, store: true, background: false };
      if (query.stream === 'true') {
        const startingAfter = query.starting_after === undefined ? undefined : Number(query.starting_after);
        await streamRunEvents(ctx, runHandle(await temporal(), run.id), { runId: run.id, cancelOnDisconnect: false, wire: responseEvents({ runId: () => run.id, ...shown, structured: false, startingAfter }) });
        return;
      }
      ctx.body = responseObject(run, shown);
    },
  );

  router.post<{ input: Input<typeof CancelResponse> }>(
    '/v1/responses/:response_id/cancel',
    validate(CancelResponse),
    authorize({ scopes: ['responses:create'], endpoint: 'v1_responses_cancel' }),
    async (ctx) => {
      const run = await cancelAndShow(ctx.state.principal!, ctx.state.input.params.response_id);
      ctx.body = responseObject(run, { model: run.agent, store: true, background: true });
    },
  );
}
