import type { Context } from 'koa';
import { WorkflowFailedError } from '@temporalio/client';
import { chooseConfiguration, type AgentConfig, type AgentStatus, type ConfigurationChoice } from '../domain/agents';
import { ERROR_TABLE, ServiceError } from '../domain/errors';
import { hasPrefix, mintId, mintTraceId } from '../domain/ids';
import type { RunInput, RunKind, RunOutcome } from '../domain/runs';
import type { ConversationRecord } from '../db/conversations';
import { Document, KnowledgeCollection, models } from '../db/models';
import { sql, statement } from '../db/sql';
import type { agentRun } from '../workflows/agentRun';
import { SEARCH_ATTRIBUTES } from '../workflows/registry';
import { workspaceOf } from './middleware/auth';
import type { ErrorBody } from './middleware/errorEnvelope';
import type { AppState } from './state';
import { relayRunEvents } from './streaming';
import { temporal } from './temporal';
import { notFound } from './tenancy';
import type { ExecutionRequest } from './validation/runtimeInput';

export interface ExecutionTarget {
  kind: RunKind;
  agentPublicId: string;
  /** Posting a message: the conversation, already resolved in the caller's workspace. */
  conversation?: Pick<ConversationRecord, 'id' | 'publicId' | 'channel'>;
}

type Ctx = Context & { state: AppState };

interface ResolvedAgent {
  id: number;
  publicId: string;
  status: AgentStatus;
  publishedVersion: number;
  draftChanged: boolean;
  draftConfig: AgentConfig;
  publishedConfig: AgentConfig | null;
  /** The workspace's balance, read with the agent for the billing gate. */
  credits: number;
}

/** The agent, its published configuration and the workspace's balance: everything execute() checks, in one round trip. */
const RESOLVE_AGENT = statement(
  `SELECT a.id, a.public_id AS "publicId", a.status, a.published_version AS "publishedVersion", a.draft_changed AS "draftChanged",
          a.draft_config AS "draftConfig", v.config AS "publishedConfig", w.credits
     FROM agents a
     JOIN workspaces w ON w.id = a.workspace_id
     LEFT JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.published_version
    WHERE a.public_id = $1 AND a.workspace_id = $2`,
);

function configurationFor(agent: ResolvedAgent, choice: ConfigurationChoice): { version: number; config: AgentConfig } {
  if (choice === 'draft') return { version: agent.publishedVersion + (agent.draftChanged ? 1 : 0), config: agent.draftConfig };
  if (!agent.publishedConfig) throw new ServiceError('agent_not_available', 'Agent has no published version.');
  return { version: agent.publishedVersion, config: agent.publishedConfig };
}

/**
 * request_context.resource_id narrows the run to one document or knowledge collection of the
 * workspace. A resource the caller cannot reach is refused, never silently narrowed to nothing.
 */
async function requireReachable(workspaceId: number, resourceId: unknown): Promise<string | undefined> {
  if (resourceId === undefined) return undefined;
  models();
  const id = String(resourceId);
  const model = hasPrefix('document', id) ? Document : hasPrefix('collection', id) ? KnowledgeCollection : undefined;
  const found = model && (await (model as typeof Document).findOne({ where: { publicId: id, workspaceId }, attributes: ['id'] }));
  if (!found) throw new ServiceError('invalid_context', 'request_context.resource_id names a resource this credential cannot reach.');
  return id;
}

function respond(ctx: Ctx, outcome: RunOutcome): void {
  ctx.state.runId = outcome.run.id;
  if (!outcome.error) {
    ctx.status = 200;
    ctx.body = outcome.run;
    return;
  }
  const body: ErrorBody = {
    error: { code: outcome.error.code, message: outcome.error.message, request_id: ctx.state.requestId },
    id: outcome.run.id,
    status: outcome.run.status,
    trace_id: outcome.run.trace_id,
  };
  ctx.status = ERROR_TABLE[outcome.error.code].http;
  ctx.body = body;
}

/**
 * The one execution pipeline behind /responses, /agents/{id}/runs and /conversations/{id}/messages.
 * The body was validated and the caller authenticated and scoped before this runs; here: resolve the
 * agent and its configuration (404/409), gate on credits (402), then start the run and answer.
 */
export async function execute(ctx: Ctx, request: ExecutionRequest, target: ExecutionTarget): Promise<void> {
  const principal = ctx.state.principal!;
  const workspace = workspaceOf(principal);
  const [agent] = await sql.rows<ResolvedAgent>(RESOLVE_AGENT, [target.agentPublicId, workspace.id]);
  if (!agent) throw notFound('agent_not_found');
  const choice = chooseConfiguration(agent.status, request.options.preview, principal.scopes.has('agent:preview'));
  const { version, config } = configurationFor(agent, choice);
  const resourceId = await requireReachable(workspace.id, request.requestContext.resource_id);
  // Billing gate: a workspace that cannot spend is refused before anything is recorded or called.
  if (agent.credits <= 0) throw new ServiceError('usage_blocked', 'The workspace has no credits left; add credits to run agents.');

  const runId = mintId('run');
  const traceId = mintTraceId();
  ctx.state.runId = runId;
  ctx.state.traceId = traceId;
  const input: RunInput = {
    runId,
    kind: target.kind,
    requestId: ctx.state.requestId,
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
  const client = await temporal();
  const handle = await client.workflow.start<typeof agentRun>('agentRun', {
    taskQueue: 'agent-runs',
    workflowId: runId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: workspace.publicId },
      { key: SEARCH_ATTRIBUTES.agentId, value: agent.publicId },
      { key: SEARCH_ATTRIBUTES.kind, value: target.kind },
    ],
    memo: { request_id: ctx.state.requestId, trace_id: traceId },
  });
  if (request.options.stream) {
    await relayRunEvents(ctx, handle, { runId, requestId: ctx.state.requestId, cancelOnDisconnect: true });
    return;
  }
  try {
    respond(ctx, await handle.result());
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw new ServiceError('internal_error', 'Internal error.');
    throw err;
  }
}
