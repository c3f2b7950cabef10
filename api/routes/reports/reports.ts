import Router from '@koa/router';
import type { Context } from 'koa';
import { mintId } from '../../../domain/ids';
import { reportObject, reportTask } from '../../../domain/reports';
import { MAX_RUN_TIMEOUT_MS } from '../../../domain/timings';
import { findReport, insertReport, reportPage, type ReportRow } from '../../../db/reports';
import { temporal } from '../../../infra/temporalClient';
import { startReportWorkflow } from '../../../workflowClients/report.client';
import { requesterOf } from '../../execution/execution';
import { planRun } from '../../../planning/planRun';
import { answerAccepted } from '../../execution/answerAccepted';
import { listPage } from '../listPage';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateReport, ListReports, ReadReport } from './schema';

type Ctx = Context & { state: AppState };

/** Starts the report's workflow (or finds it started) and answers 202 with the record: the caller polls it. */
async function accepted(ctx: Ctx, report: ReportRow): Promise<void> {
  await startReportWorkflow(await temporal(), { reportId: report.public_id, format: report.format, run: report.run_input });
  ctx.state.runId = report.run;
  answerAccepted(ctx, `/api/v2/reports/${report.public_id}`, reportObject(report));
}

/** Reports: an agent does a task once, outside any conversation; the answer is kept as the result. */
export function reportsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateReport> }>(
    '/api/v2/reports',
    validate(CreateReport),
    authorize({ scopes: ['reports:create'], endpoint: 'reports_create', agent: (ctx) => ctx.state.input.body.agent }),
    idempotent('Idempotent-Replay'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      // A retry of a request that recorded its report starts (or finds) that report's workflow.
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findReport(workspace.id, resumed) : undefined;
      if (earlier) return accepted(ctx, earlier);

      const reportId = resumed ?? mintId('report');
      const run = await planRun(
        requesterOf(ctx.state),
        {
          input: reportTask(body.task, body.inputs, body.format),
          attachments: [],
          channel: '',
          metadata: body.metadata,
          requestContext: {},
          options: {
            knowledgePolicy: 'auto',
            memoryPolicy: 'none',
            toolPolicy: 'auto',
            preview: false,
            stream: false,
            // Nobody waits on a report's answer: it may take the longest a run can.
            timeoutMs: MAX_RUN_TIMEOUT_MS,
            responseFormat: body.format === 'json' ? { type: 'json_schema', name: 'report', schema: body.schema!, strict: true } : { type: 'text' },
          },
        },
        { kind: 'report', agentPublicId: body.agent },
        mintId('run'),
        () => ctx.state.recovery?.begin(reportId),
      );
      await insertReport({
        publicId: reportId,
        workspaceId: workspace.id,
        agentKey: run.agent.id,
        runId: run.runId,
        name: body.name,
        format: body.format,
        metadata: body.metadata,
        requestId: run.requestId,
        traceId: run.traceId,
        runInput: run,
      });
      ctx.state.traceId = run.traceId;
      await accepted(ctx, (await findReport(workspace.id, reportId))!);
    },
  );

  router.get<{ input: Input<typeof ListReports> }>(
    '/api/v2/reports',
    validate(ListReports),
    authorize({ scopes: ['reports:read'], endpoint: 'reports_list' }),
    async (ctx) => {
      const { limit, after } = ctx.state.input.query;
      ctx.body = listPage(await reportPage(workspaceOf(ctx.state.principal).id, after, limit + 1), limit, reportObject);
    },
  );

  router.get<{ input: Input<typeof ReadReport> }>(
    '/api/v2/reports/:id',
    validate(ReadReport),
    authorize({ scopes: ['reports:read'], endpoint: 'reports_read' }),
    async (ctx) => {
      const report = await findReport(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!report) throw notFound('report_not_found');
      ctx.body = reportObject(report);
    },
  );
}
