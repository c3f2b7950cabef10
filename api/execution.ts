import type { Context } from 'koa';
import { WorkflowFailedError } from '@temporalio/client';
import { config } from '../infra/config';
import { chooseConfiguration, type AgentConfig, type ConfigurationChoice } from '../domain/agents';
import { ERROR_TABLE, errorBody, ServiceError } from '../domain/errors';
import { maxRunCost } from '../domain/billing';
import { hasPrefix, mintId, mintTraceId } from '../domain/ids';
import { toolSpecs } from '../domain/tools';
import { conversational, type RunInput, type RunKind, type RunOptions, type RunOutcome } from '../domain/runs';
import type { ConversationRecord } from '../db/conversations';
import { findRunnableAgent, type RunnableAgent } from '../db/agents';
import { reserveCredits } from '../db/creditReservations';
import { documentExists } from '../db/documents';
import { collectionExists, collectionName } from '../db/knowledgeCollections';
import { documentIndexedIn } from '../db/knowledgeChunks';
import { knowledgePlan, type KnowledgePlan } from '../domain/knowledge';
import { runStatus } from '../db/runs';
import { describeRun, runHandle, startRun, type RunHandle } from '../workflows/agentRun.client';
import { workspaceOf } from './middleware/auth';
import type { AppState } from './state';
import { runAsItStands } from './runs';
import { relayRunEvents } from './streaming';
import { temporal } from '../infra/temporalClient';
import { notFound } from './tenancy';
import type { ExecutionRequest } from './validation/runtimeInput';

export interface ExecutionTarget {
  kind: RunKind;
  agentPublicId: string;
  /** Posting a message: the conversation, already resolved in the caller's workspace. */
  conversation?: Pick<ConversationRecord, 'id' | 'publicId' | 'channel'>;
}

type Ctx = Context & { state: AppState };

function configurationFor(agent: RunnableAgent, choice: ConfigurationChoice): { version: number; config: AgentConfig } {
  if (choice === 'draft') return { version: agent.publishedVersion + (agent.draftChanged ? 1 : 0), config: agent.draftConfig };
  if (!agent.publishedConfig) throw new ServiceError('agent_not_available', 'Agent has no published version.');
  return { version: agent.publishedVersion, config: agent.publishedConfig };
}

/** Whether the resource is in the knowledge the run retrieves from (a document indexed in, or one of, its collections). */
async function inKnowledge(workspaceId: number, id: string, plan: KnowledgePlan): Promise<boolean> {
  if (hasPrefix('document', id)) return documentIndexedIn(workspaceId, plan.collections, id);
  const name = await collectionName(workspaceId, id);
  return name !== undefined && plan.collections.includes(name);
}

/**
 * request_context.resource_id narrows the run to one document or knowledge collection of the
 * workspace. A resource the caller cannot reach is refused, never silently narrowed to nothing: so is
 * one outside the agent's knowledge when the run retrieves.
 */
async function requireReachable(workspaceId: number, resourceId: unknown, plan: KnowledgePlan): Promise<string | undefined> {
  if (resourceId === undefined) return undefined;
  const id = String(resourceId);
  const exists = hasPrefix('document', id) ? documentExists : hasPrefix('collection', id) ? collectionExists : undefined;
  if (!exists || !(await exists(workspaceId, id))) throw new ServiceError('invalid_context', 'request_context.resource_id names a resource this credential cannot reach.');
  if (plan.collections.length > 0 && !(await inKnowledge(workspaceId, id, plan))) {
    throw new ServiceError('invalid_context', "request_context.resource_id names a resource outside this agent's knowledge; ingest it into one of the agent's collections first.");
  }
  return id;
}

function respond(ctx: Ctx, outcome: RunOutcome): void {
  ctx.state.runId = outcome.run.id;
  if (!outcome.error) {
    ctx.status = 200;
    ctx.body = outcome.run;
    return;
  }
  // The run's own request id, so every answer about one run (a resumed retry's too) is the same bytes.
  ctx.status = ERROR_TABLE[outcome.error.code].http;
  ctx.body = errorBody(outcome.error, outcome.run.request_id, outcome.run);
}

/** The run's outcome, or undefined when it is not over within `ms`. */
function within(handle: RunHandle, ms: number): Promise<RunOutcome | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return Promise.race([handle.result(), late]).finally(() => clearTimeout(timer));
}

/**
 * Answers from the run: its event stream, or its outcome. The wait for the outcome is bounded
 * (timeout_ms plus a grace): past it the answer is 202 with the run as it stands, which the caller
 * polls, and which idempotency does not store, so a retry with the same key attaches to the run.
 */
async function answer(ctx: Ctx, handle: RunHandle, runId: string, options: RunOptions, original: boolean): Promise<void> {
  ctx.state.runId = runId;
  if (options.stream) {
    // Only the stream that started the run cancels it by going away; a retry attaching to it follows it.
    await relayRunEvents(ctx, handle, { runId, requestId: ctx.state.requestId, cancelOnDisconnect: original });
    return;
  }
  let outcome: RunOutcome | undefined;
  try {
    outcome = await within(handle, options.timeoutMs + config().apiWaitGraceMs);
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw new ServiceError('internal_error', 'Internal error.');
    throw err;
  }
  if (outcome) return respond(ctx, outcome);
  ctx.state.provisional = true;
  ctx.status = 202;
  ctx.set('Location', `/api/v2/runs/${runId}`);
  ctx.body = await runAsItStands(ctx.state.principal!, runId);
}

/**
 * Everything between an authorized request and its workflow: the agent and its configuration
 * (404/409), the request's resource (403), the recovery point (`begin`, before anything is held),
 * the credit hold of the run's maximum cost (402), and the run's input. Used by the execution
 * endpoints and by reports.
 */
export async function planRun(state: AppState, request: ExecutionRequest, target: ExecutionTarget, runId: string, begin: () => Promise<void> | undefined): Promise<RunInput> {
  const principal = state.principal!;
  const workspace = workspaceOf(principal);
  const agent = await findRunnableAgent(workspace.id, target.agentPublicId);
  if (!agent) throw notFound('agent_not_found');
  const choice = chooseConfiguration(agent.status, request.options.preview, principal.scopes.has('agent:preview'));
  const { version, config } = configurationFor(agent, choice);
  const knowledge = knowledgePlan(config, request.options.knowledgePolicy);
  const resourceId = await requireReachable(workspace.id, request.requestContext.resource_id, knowledge);
  await begin();
  // Billing gate: the run's maximum cost is held from the balance atomically, so concurrent runs can
  // never spend more than there is; a workspace that cannot cover it is refused before anything runs.
  const maximum = maxRunCost({
    config,
    request: [request.input, request.attachments],
    format: request.options.responseFormat,
    tools: toolSpecs(config, request.options.toolPolicy),
    memory: conversational(target.kind) && request.options.memoryPolicy === 'auto',
    knowledge: knowledge.collections.length > 0,
  });
  if (!(await reserveCredits(workspace.id, runId, maximum))) {
    throw new ServiceError('usage_blocked', `The workspace's balance does not cover this run (it may cost up to ${maximum} credits); add credits to run agents.`);
  }
  const traceId = state.traceId ?? mintTraceId();
  state.runId = runId;
  state.traceId = traceId;
  return {
    runId,
    kind: target.kind,
    requestId: state.requestId,
    traceId,
    workspace,
    agent: { id: agent.id, publicId: agent.publicId, version, config },
    ...(target.conversation && { conversation: { id: target.conversation.id, publicId: target.conversation.publicId, channel: target.conversation.channel } }),
    ...(request.externalRef && { externalRef: request.externalRef }),
    input: request.input,
    attachments: request.attachments,
    channel: request.channel,
    ...(request.locale && { locale: request.locale }),
    metadata: request.metadata,
    requestContext: request.requestContext,
    ...(resourceId && { resourceId }),
    options: request.options,
    acceptedAt: Date.now(),
  };
}

/**
 * The one execution pipeline behind /responses, /agents/{id}/runs and /conversations/{id}/messages.
 * The body was validated and the caller authenticated and scoped before this runs; here: resolve the
 * agent and its configuration (404/409), gate on credits (402), then start the run and answer.
 * A retried idempotent request that began a run before attaches to it instead (its recovery point).
 */
export async function execute(ctx: Ctx, request: ExecutionRequest, target: ExecutionTarget): Promise<void> {
  const client = await temporal();
  const resumed = ctx.state.recovery?.resumed;
  if (resumed) {
    // Looked up in this order: a run recorded before the lookup had a workflow, so if Temporal no
    // longer keeps it (past its retention) it is answered from its record, never held or started again.
    const recorded = (await runStatus(resumed)) !== undefined;
    if (await describeRun(client, resumed)) return answer(ctx, runHandle(client, resumed), resumed, request.options, false);
    if (recorded) {
      ctx.state.runId = resumed;
      ctx.body = await runAsItStands(ctx.state.principal!, resumed);
      return;
    }
  }

  // A resumed request whose run never reached Temporal starts it now, under the id it recorded.
  const runId = resumed ?? mintId('run');
  // The recovery point is stored before anything is held or started: from here on the key is never
  // released, and a replay (which begins nothing) stops here.
  const input = await planRun(ctx.state, request, target, runId, () => ctx.state.recovery?.begin(runId));
  const handle = await startRun(client, input);
  await answer(ctx, handle, runId, request.options, !resumed);
}
