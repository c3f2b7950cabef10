import Router from '@koa/router';
import { ServiceError } from '../../../domain/errors';
import { temporal } from '../../../infra/temporalClient';
import { runHandle } from '../../../workflowClients/agentRun.client';
import { authorize } from '../../middleware/auth';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import { APPROVER_SCOPE, readableKinds, RUN_READER_SCOPES, runAsItStands } from '../../../runs/asItStands';
import type { AppState } from '../../middleware/state';
import { streamRunEvents } from '../../execution/eventStream';
import { cancelAndShow } from '../../../runs/cancelRun';
import { AnswerAction, CancelRun, FollowRunEvents, ListRuns, ReadRun } from './schema';
import { answerAction } from '../../../runs/runActions';
import { runPage } from '../../../db/runs';
import { runSummary } from '../../../domain/runSummary';
import { listPage } from '../listPage';
import { workspaceOf } from '../../../callers/principal';

/** GET /api/v2/runs (the runs that need attention), /api/v2/runs/{run_id}, its events, and POST /api/v2/runs/{run_id}/cancel and /actions. */
export function runsRoutes(router: Router<AppState>): void {
  router.get<{ input: Input<typeof ListRuns> }>(
    '/api/v2/runs',
    validate(ListRuns),
    authorize({ scopes: RUN_READER_SCOPES, endpoint: 'runs_list' }),
    async (ctx) => {
      const { limit, after, filters: f } = ctx.state.input.query;
      const principal = ctx.state.principal!;
      const kinds = readableKinds(principal).filter((k) => f.kind === undefined || k === f.kind);
      const page = await runPage(workspaceOf(principal).id, after, limit + 1, {
        kinds,
        statuses: f.status?.split(','),
        agent: f.agent,
        createdAfter: f.created_after === undefined ? undefined : new Date(f.created_after),
        createdBefore: f.created_before === undefined ? undefined : new Date(f.created_before),
        queuedLongerThanMs: f.queued_longer_than_ms === undefined ? undefined : Number(f.queued_longer_than_ms),
        reconciled: f.reconciled === undefined ? undefined : f.reconciled === 'true',
      });
      ctx.body = listPage(page?.rows, limit, runSummary, 'next_cursor', page?.scannedTo);
    },
  );

  router.get<{ input: Input<typeof ReadRun> }>(
    '/api/v2/runs/:run_id',
    validate(ReadRun),
    authorize({ scopes: [...RUN_READER_SCOPES, APPROVER_SCOPE], endpoint: 'runs_read' }),
    async (ctx) => {
      ctx.body = await runAsItStands(ctx.state.principal!, ctx.state.input.params.run_id, { approver: true });
    },
  );

  /** Replays the run's events and follows them to the end, resuming after Last-Event-ID. */
  router.get<{ input: Input<typeof FollowRunEvents> }>(
    '/api/v2/runs/:run_id/events',
    validate(FollowRunEvents),
    authorize({ scopes: RUN_READER_SCOPES, endpoint: 'run_events' }),
    async (ctx) => {
      const { params, headers } = ctx.state.input;
      const run = await runAsItStands(ctx.state.principal!, params.run_id);
      await streamRunEvents(ctx, runHandle(await temporal(), run.id), { runId: run.id, after: headers['last-event-id'], cancelOnDisconnect: false });
    },
  );

  /** Idempotent: cancelling a finished run changes nothing and answers it as it ended. */
  router.post<{ input: Input<typeof CancelRun> }>(
    '/api/v2/runs/:run_id/cancel',
    validate(CancelRun),
    authorize({ scopes: RUN_READER_SCOPES, endpoint: 'runs_cancel' }),
    async (ctx) => {
      ctx.body = await cancelAndShow(ctx.state.principal!, ctx.state.input.params.run_id);
    },
  );

  /** Answers a tool call the run waits on (docs/api.md, "Actions"); idempotent by call_id. */
  router.post<{ input: Input<typeof AnswerAction> }>(
    '/api/v2/runs/:run_id/actions',
    validate(AnswerAction),
    authorize({ scopes: [...RUN_READER_SCOPES, APPROVER_SCOPE], endpoint: 'runs_actions' }),
    async (ctx) => {
      const { params, body } = ctx.state.input;
      // An approver decides; a client tool's output is the run's caller's to send.
      if (body.output !== undefined && !RUN_READER_SCOPES.some((scope) => ctx.state.principal!.scopes.has(scope))) {
        throw new ServiceError('permission_denied', 'actions:approve decides on approvals only: a client tool\'s output needs the scope that runs the agent.');
      }
      ctx.body = await answerAction(await runAsItStands(ctx.state.principal!, params.run_id, { approver: body.decision !== undefined }), body);
    },
  );
}
