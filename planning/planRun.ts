import { chooseConfiguration, DEFAULT_MAX_OUTPUT_TOKENS, type AgentConfig, type ConfigurationChoice } from '../domain/agents';
import { runLimits } from '../domain/limits';
import { config as serviceConfig } from '../infra/config';
import { costInputOf, maxRunCost } from '../domain/billing';
import { ServiceError } from '../domain/errors';
import { hasPrefix, mintTraceId } from '../domain/ids';
import { knowledgePlan, type KnowledgePlan } from '../domain/knowledge';
import { type RunInput, type RunKind } from '../domain/runs';
import type { Scope } from '../domain/scopes';
import { conversationById, type ConversationRecord } from '../db/conversations';
import { findRunnableAgent, type RunnableAgent } from '../db/agents';
import { reserveCredits, reserveTurn } from '../db/creditReservations';
import { transaction, type Sql } from '../db/sql';
import { MAX_OPEN_TURNS, type ConcurrencyPolicy, type TurnRef } from '../domain/turns';
import { documentExists } from '../db/documents';
import { documentIndexedIn } from '../db/knowledgeChunks';
import { collectionExists, collectionName } from '../db/knowledgeCollections';
import { modelWindow } from '../infra/modelWindow';
import { notFound } from '../callers/tenancy';
import type { ExecutionRequest } from '../contract/runtimeInput';

export interface ExecutionTarget {
  kind: RunKind;
  agentPublicId: string;
  /** Posting a message: the conversation, already resolved in the caller's workspace. */
  conversation?: TargetConversation;
  /**
   * Posting the first message of a conversation not yet open (a stored `/v1` response): it is opened
   * in the transaction that holds the run's credits, so a refused run leaves no conversation behind.
   */
  opensConversation?: (tx: Sql) => Promise<TargetConversation>;
  /** Posting a message: what to do when earlier turns of the conversation are open (default enqueue). */
  concurrency?: ConcurrencyPolicy;
}

type TargetConversation = Pick<ConversationRecord, 'id' | 'publicId' | 'channel'>;

/** Thrown inside the hold's transaction when a conversation was opened in it: the conversation goes too. */
class NotHeld extends Error {}
/** A resumed request's hold was taken before, in the conversation opened then: the one opened now goes. */
class HeldBefore extends Error {
  constructor(readonly conversationId: number) {
    super('held before');
  }
}

/** Who asks for the run: the caller's workspace and scopes, and the request's ids. */
export interface RunRequester {
  workspace: RunInput['workspace'];
  scopes: ReadonlySet<Scope>;
  requestId: string;
  traceId?: string;
}

function configurationFor(agent: RunnableAgent, choice: ConfigurationChoice): { version: number; config: AgentConfig } {
  if (choice === 'draft') return { version: agent.publishedVersion + (agent.draftChanged ? 1 : 0), config: agent.draftConfig };
  if (!agent.publishedConfig) throw new ServiceError('agent_not_available', 'Agent has no published version.');
  return { version: agent.publishedVersion, config: agent.publishedConfig };
}

/** The configuration with a `/v1` caller's output cap, which may only lower the agent's (its hold and each call's cap follow). */
function lowerOutputCap(config: AgentConfig, callerCap: number | undefined): AgentConfig {
  if (callerCap === undefined || callerCap >= (config.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS)) return config;
  return { ...config, max_output_tokens: callerCap };
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

/**
 * The run's credit hold (false when the balance cannot cover it). A message's hold is also its turn:
 * the turn to wait for when earlier turns of its conversation are open, refused instead under
 * `reject` or when the conversation holds MAX_OPEN_TURNS already. A resumed request keeps its turn.
 */
async function holdCredits(workspaceId: number, runId: string, credits: number, target: ExecutionTarget): Promise<{ held: boolean; turn?: TurnRef; conversation?: TargetConversation }> {
  if (!target.conversation && !target.opensConversation) return { held: await reserveCredits(workspaceId, runId, credits) };
  return transaction(async (tx) => {
    const conversation = target.conversation ?? (await target.opensConversation!(tx));
    const turn = await reserveTurn(workspaceId, runId, credits, conversation.id, tx);
    if (!turn && !target.conversation) throw new NotHeld();
    if (turn && !turn.reserved && !target.conversation && turn.conversationId) throw new HeldBefore(turn.conversationId);
    if (!turn) return { held: false };
    if (turn.reserved && turn.ahead.length > 0 && target.concurrency === 'reject') {
      // Thrown inside the transaction: nothing is held.
      throw new ServiceError('conversation_busy', 'An earlier turn of this conversation is still running or queued, and this message asked to be refused then (concurrency: reject).');
    }
    if (turn.reserved && turn.ahead.length >= MAX_OPEN_TURNS) {
      throw new ServiceError('conversation_busy', `This conversation already has ${MAX_OPEN_TURNS} turns running or queued; retry once one has finished.`);
    }
    return { held: true, conversation, ...(turn.ahead.length > 0 && { turn: { conversationId: conversation.id, number: turn.turn } }) };
  }).catch(async (err) => {
    if (err instanceof NotHeld) return { held: false };
    if (err instanceof HeldBefore) return holdCredits(workspaceId, runId, credits, { ...target, opensConversation: undefined, conversation: await conversationById(err.conversationId) });
    throw err;
  });
}

/**
 * Everything between an authorized request and its workflow: the agent and its configuration
 * (404/409), the request's resource (403), the recovery point (`begin`, before anything is held),
 * the credit hold of the run's maximum cost (402; a message's turn, 409), and the run's input. Used by the execution
 * endpoints, reports, and the items of runs.batch jobs (in a worker): nothing here knows of Koa.
 */
export async function planRun(who: RunRequester, request: ExecutionRequest, target: ExecutionTarget, runId: string, begin: () => Promise<void> | undefined): Promise<RunInput> {
  const { workspace } = who;
  const agent = await findRunnableAgent(workspace.id, target.agentPublicId);
  if (!agent) throw notFound('agent_not_found');
  const choice = chooseConfiguration(agent.status, request.options.preview, who.scopes.has('agent:preview'));
  const configured = configurationFor(agent, choice);
  const { version } = configured;
  const limits = runLimits(configured.config.limits, serviceConfig().runLimits, request.callerLimits);
  const config = lowerOutputCap(configured.config, request.callerLimits?.max_output_tokens);
  const knowledge = knowledgePlan(config, request.options.knowledgePolicy);
  const resourceId = await requireReachable(workspace.id, request.requestContext.resource_id, knowledge);
  await begin();
  // Billing gate: the run's maximum cost is held from the balance atomically, so concurrent runs can
  // never spend more than there is; a workspace that cannot cover it is refused before anything runs.
  const contextTokens = await modelWindow();
  const maximum = maxRunCost(costInputOf({ config, kind: target.kind, input: request.input, attachments: request.attachments, options: request.options, exchange: request.exchange, contextTokens, limits }));
  const { held, turn, conversation } = await holdCredits(workspace.id, runId, maximum, target);
  if (!held) {
    throw new ServiceError('usage_blocked', `The workspace's balance does not cover this run (it may cost up to ${maximum} credits); add credits to run agents.`);
  }
  return {
    runId,
    kind: target.kind,
    requestId: who.requestId,
    traceId: who.traceId ?? mintTraceId(),
    workspace,
    agent: { id: agent.id, publicId: agent.publicId, name: agent.name, version, config },
    ...(conversation && { conversation: { id: conversation.id, publicId: conversation.publicId, channel: conversation.channel } }),
    ...(request.externalRef && { externalRef: request.externalRef }),
    input: request.input,
    attachments: request.attachments,
    channel: request.channel,
    ...(request.locale && { locale: request.locale }),
    metadata: request.metadata,
    requestContext: request.requestContext,
    ...(resourceId && { resourceId }),
    options: request.options,
    ...(request.exchange && { exchange: request.exchange }),
    acceptedAt: Date.now(),
    contextTokens,
    ...(turn && { turn }),
    limits,
  };
}
