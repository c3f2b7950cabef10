import Router from '@koa/router';
import { WorkflowNotFoundError } from '@temporalio/client';
import { invalidRequest } from '../../domain/errors';
import { TERMINAL_STATUSES } from '../../domain/runs';
import { runHandle } from '../../workflows/agentRun.client';
import { authorize, workspaceOf } from '../middleware/auth';
import { runAsItStands } from '../runs';
import type { AppState } from '../state';
import { temporal } from '../../infra/temporalClient';
import { relayRunEvents } from '../streaming';

const CANCEL_WAIT_MS = 5000;

/** GET /api/v2/runs/{run_id}, its events, and POST /api/v2/runs/{run_id}/cancel. */
export function runsRoutes(router: Router<AppState>): void {
  // Run retrieval serves callers of either execution endpoint.
  const scopes = ['agents:run', 'responses:create'] as const;

  router.get('/api/v2/runs/:run_id', authorize({ scopes, endpoint: 'runs_read' }), async (ctx) => {
    ctx.body = await runAsItStands(workspaceOf(ctx.state.principal), ctx.params.run_id);
  });

  /** Replays the run's events and follows them to the end, resuming after Last-Event-ID. */
  router.get('/api/v2/runs/:run_id/events', async (ctx, next) => {
    // A malformed header is a 400 before the credential is looked at, like every malformed request.
    const after = ctx.get('Last-Event-ID') || undefined;
    if (after !== undefined && !/^\d+-\d+$/.test(after)) throw invalidRequest('Last-Event-ID must be an event id from this stream.');
    await next();
  }, authorize({ scopes, endpoint: 'run_events' }), async (ctx) => {
    const run = await runAsItStands(workspaceOf(ctx.state.principal), ctx.params.run_id);
    const after = ctx.get('Last-Event-ID') || undefined;
    await relayRunEvents(ctx, runHandle(await temporal(), run.id), { runId: run.id, requestId: ctx.state.requestId, after, cancelOnDisconnect: false });
  });

  /** Idempotent: cancelling a finished run changes nothing and answers it as it ended. */
  router.post('/api/v2/runs/:run_id/cancel', authorize({ scopes, endpoint: 'runs_cancel' }), async (ctx) => {
    const workspace = workspaceOf(ctx.state.principal);
    const run = await runAsItStands(workspace, ctx.params.run_id);
    if (!TERMINAL_STATUSES.has(run.status)) {
      const handle = runHandle(await temporal(), run.id);
      try {
        await handle.cancel();
        // The workflow settles the run as cancelled; wait (bounded: a queued run needs a worker) so the answer shows it.
        await Promise.race([handle.result().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS).unref())]);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    ctx.body = await runAsItStands(workspace, ctx.params.run_id);
  });
}
