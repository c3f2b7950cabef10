import Router from '@koa/router';
import { QueryTypes } from 'sequelize';
import { isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { invalidRequest, type RunStatus } from '../../domain/errors';
import { defaultPayloadConverter } from '@temporalio/common';
import { hasPrefix } from '../../domain/ids';
import { TERMINAL_STATUSES, toRunResponse, ZERO_USAGE, type OutputItem, type RunInput, type RunResponse, type Usage } from '../../domain/runs';
import { db } from '../../db/sequelize';
import { authorize, workspaceOf } from '../middleware/auth';
import type { AppState } from '../state';
import { temporal } from '../temporal';
import { relayRunEvents } from '../streaming';
import { notFound } from '../tenancy';

interface RunRow {
  public_id: string;
  status: RunStatus;
  agent: string;
  agent_version: number;
  conversation: string | null;
  internal: boolean | null;
  output: OutputItem[] | null;
  usage: Usage;
  metadata: Record<string, unknown>;
  request_id: string;
  trace_id: string;
}

const CANCEL_WAIT_MS = 5000;
const GRPC_NOT_FOUND = 5;

/** The run as recorded, scoped to the caller's workspace: a foreign run is the same 404 as a missing one. */
async function loadRun(workspaceId: number, publicId: string): Promise<RunResponse> {
  const [row] = await db().query<RunRow>(
    `SELECT r.public_id, r.status, a.public_id AS agent, r.agent_version, c.public_id AS conversation, c.internal,
            r.output, r.usage, r.metadata, r.request_id, r.trace_id
       FROM runs r JOIN agents a ON a.id = r.agent_id LEFT JOIN conversations c ON c.id = r.conversation_id
      WHERE r.public_id = :publicId AND r.workspace_id = :workspaceId`,
    { replacements: { publicId, workspaceId }, type: QueryTypes.SELECT },
  );
  if (!row) return queuedRun(workspaceId, publicId);
  return toRunResponse({
    id: row.public_id,
    status: row.status,
    agent: row.agent,
    agentVersion: row.agent_version,
    conversation: row.internal ? undefined : row.conversation ?? undefined,
    // Stateless /responses runs keep no copy of the exchange: their output is not retrievable.
    output: row.output ?? [],
    usage: row.usage,
    metadata: row.metadata,
    requestId: row.request_id,
    traceId: row.trace_id,
  });
}

/**
 * A run whose workflow has started but that no worker has begun yet has no record: it is `queued`,
 * described from the workflow's own input (the run is recorded when a worker takes it up).
 */
async function queuedRun(workspaceId: number, publicId: string): Promise<RunResponse> {
  if (!hasPrefix('run', publicId)) throw notFound('run_not_found');
  let input: RunInput | undefined;
  try {
    const history = await (await temporal()).workflow.getHandle(publicId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    input = payload ? defaultPayloadConverter.fromPayload<RunInput>(payload) : undefined;
  } catch (err) {
    // fetchHistory answers a missing workflow with the raw gRPC NOT_FOUND.
    if (!(err instanceof WorkflowNotFoundError) && !(isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND)) throw err;
  }
  if (!input || input.workspace.id !== workspaceId) throw notFound('run_not_found');
  return toRunResponse({
    id: input.runId,
    status: 'queued',
    agent: input.agent.publicId,
    agentVersion: input.agent.version,
    conversation: input.kind === 'response' ? undefined : input.conversation?.publicId,
    output: [],
    usage: ZERO_USAGE,
    metadata: input.metadata,
    requestId: input.requestId,
    traceId: input.traceId,
  });
}

/** GET /api/v2/runs/{run_id} and POST /api/v2/runs/{run_id}/cancel. */
export function runsRoutes(router: Router<AppState>): void {
  // Run retrieval serves callers of either execution endpoint.
  const scopes = ['agents:run', 'responses:create'] as const;

  router.get('/api/v2/runs/:run_id', authorize({ scopes, endpoint: 'runs_read' }), async (ctx) => {
    ctx.body = await loadRun(workspaceOf(ctx.state.principal).id, ctx.params.run_id);
  });

  /** Replays the run's events and follows them to the end, resuming after Last-Event-ID. */
  router.get('/api/v2/runs/:run_id/events', async (ctx, next) => {
    // A malformed header is a 400 before the credential is looked at, like every malformed request.
    const after = ctx.get('Last-Event-ID') || undefined;
    if (after !== undefined && !/^\d+-\d+$/.test(after)) throw invalidRequest('Last-Event-ID must be an event id from this stream.');
    await next();
  }, authorize({ scopes, endpoint: 'run_events' }), async (ctx) => {
    const run = await loadRun(workspaceOf(ctx.state.principal).id, ctx.params.run_id);
    const after = ctx.get('Last-Event-ID') || undefined;
    const handle = (await temporal()).workflow.getHandle(run.id);
    await relayRunEvents(ctx, handle, { runId: run.id, requestId: ctx.state.requestId, after, cancelOnDisconnect: false });
  });

  /** Idempotent: cancelling a finished run changes nothing and answers it as it ended. */
  router.post('/api/v2/runs/:run_id/cancel', authorize({ scopes, endpoint: 'runs_cancel' }), async (ctx) => {
    const workspaceId = workspaceOf(ctx.state.principal).id;
    const run = await loadRun(workspaceId, ctx.params.run_id);
    if (!TERMINAL_STATUSES.has(run.status)) {
      const handle = (await temporal()).workflow.getHandle(run.id);
      try {
        await handle.cancel();
        // The workflow settles the run as cancelled; wait (bounded: a queued run needs a worker) so the answer shows it.
        await Promise.race([handle.result().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS).unref())]);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    ctx.body = await loadRun(workspaceId, ctx.params.run_id);
  });
}
