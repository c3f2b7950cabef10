import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { mintId, mintTraceId } from '../../../domain/ids';
import { ITEM_SCOPE, type JobStatus, type JobType } from '../../../domain/jobs';
import { jobList, jobObject, jobWithCancel, jobWithItems } from '../../../domain/jobRecord';
import { requireScope } from '../../middleware/credentials';
import { findJob, insertJob, jobCounts, jobItems, jobPage, requestCancel, type JobRow } from '../../../db/jobs';
import { temporal } from '../../../infra/temporalClient';
import { cancelJobWorkflow, startJobWorkflow } from '../../../workflowClients/job.client';
import { answerAccepted } from '../../execution/answerAccepted';
import { requireCredit } from '../../transfers/documents';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CancelJob, CreateJob, ListJobs, ReadJob, sameIdempotencyKey, type JobRequest } from './schema';

type Ctx = Context & { state: AppState };

/** The body's idempotency_key is the key when no header is sent: idempotent() reads the header. */
async function bodyIdempotencyKey(ctx: Context & { state: AppState & { input: { body: JobRequest } } }, next: Next): Promise<void> {
  const key = ctx.state.input.body.idempotencyKey;
  if (key !== undefined && ctx.get('Idempotency-Key') === '') ctx.request.headers['idempotency-key'] = key;
  await next();
}

/** A job's items run under its creator's scopes: creating one needs the scope of what its items do, besides jobs:create. */
async function requireItemScope(ctx: Context & { state: AppState & { input: { body: JobRequest } } }, next: Next): Promise<void> {
  requireScope(ctx.state.principal!, [ITEM_SCOPE[ctx.state.input.body.type]]);
  await next();
}

async function record(job: JobRow) {
  return jobObject(job, await jobCounts(job.id));
}

/** Starts the job's workflow (or finds it started) and answers 202 with the record: the caller polls it. */
async function accepted(ctx: Ctx, job: JobRow): Promise<void> {
  await startJobWorkflow(await temporal(), { jobId: job.public_id, type: job.type, params: job.params, workspace: workspaceOf(ctx.state.principal), fromSeq: 0 }, { requestId: job.request_id, traceId: job.trace_id });
  answerAccepted(ctx, `/api/v2/jobs/${job.public_id}`, await record(job));
}

/** Jobs: queued work over many items (runs, ingestions, extractions), followed and cancelled. */
export function jobsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateJob> }>(
    '/api/v2/jobs',
    validate(CreateJob, sameIdempotencyKey),
    authorize({ scopes: ['jobs:create'], endpoint: 'jobs_create' }),
    requireItemScope,
    bodyIdempotencyKey,
    idempotent('Idempotent-Replay'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findJob(workspace.id, resumed) : undefined;
      if (earlier) return accepted(ctx, earlier);
      // Each item that spends holds its own credits when it starts; a workspace with none is refused now.
      await requireCredit(workspace.id);
      const id = resumed ?? mintId('job');
      await ctx.state.recovery?.begin(id);
      ctx.state.traceId ??= mintTraceId();
      await insertJob({ publicId: id, workspaceId: workspace.id, type: body.type, params: body.params, items: body.items, requestId: ctx.state.requestId, traceId: ctx.state.traceId, createdBy: { keyKey: ctx.state.principal!.keyKey, memberKey: ctx.state.principal!.memberKey, grantId: ctx.state.principal!.grantId } });
      await accepted(ctx, (await findJob(workspace.id, id))!);
    },
  );

  router.get<{ input: Input<typeof ListJobs> }>(
    '/api/v2/jobs',
    validate(ListJobs),
    authorize({ scopes: ['jobs:read'], endpoint: 'jobs_list' }),
    async (ctx) => {
      const { status, type, limit, offset } = ctx.state.input.query;
      const rows = await jobPage(workspaceOf(ctx.state.principal).id, { status: status as JobStatus | undefined, type: type as JobType | undefined, offset, limit: limit + 1 });
      ctx.body = jobList(await Promise.all(rows.slice(0, limit).map(record)), rows.length > limit);
    },
  );

  router.get<{ input: Input<typeof ReadJob> }>(
    '/api/v2/jobs/:id',
    validate(ReadJob),
    authorize({ scopes: ['jobs:read'], endpoint: 'jobs_read' }),
    async (ctx) => {
      const job = await findJob(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!job) throw notFound('job_not_found');
      const { itemsLimit, itemsOffset } = ctx.state.input.query;
      const items = await jobItems(job.id, itemsOffset, itemsLimit + 1);
      ctx.body = jobWithItems(job, await jobCounts(job.id), items, itemsLimit);
    },
  );

  router.post<{ input: Input<typeof CancelJob> }>(
    '/api/v2/jobs/:id/cancel',
    validate(CancelJob),
    authorize({ scopes: ['jobs:cancel'], endpoint: 'jobs_cancel' }),
    async (ctx) => {
      const job = await findJob(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!job) throw notFound('job_not_found');
      // Idempotent: a job asked twice, or already over, is answered as it stands.
      if (await requestCancel(job.id)) await cancelJobWorkflow(await temporal(), job.public_id);
      const now = (await findJob(job.workspace_id, job.public_id))!;
      ctx.body = jobWithCancel(now, await jobCounts(now.id));
    },
  );
}
