import Router from '@koa/router';
import type { Context } from 'koa';
import type { ExtractionStatus } from '../../../domain/extractions';
import { extractionObject } from '../../../domain/extractionRecord';
import { mintId, mintTraceId } from '../../../domain/ids';
import { extractionPage, findExtraction, type ExtractionRow } from '../../../db/extractions';
import { temporal } from '../../../infra/temporalClient';
import { startExtractionWorkflow } from '../../../workflowClients/extraction.client';
import { requireCredit } from '../../transfers/documents';
import { createExtraction } from '../../../planning/extractions';
import { answerAccepted } from '../../execution/answerAccepted';
import { listPage } from '../listPage';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateExtraction, ListExtractions, ReadExtraction } from './schema';

type Ctx = Context & { state: AppState };

/** Starts the extraction's workflow (or finds it started) and answers 202 with the record: the caller polls it. */
async function accepted(ctx: Ctx, extraction: ExtractionRow): Promise<void> {
  const workspace = workspaceOf(ctx.state.principal);
  await startExtractionWorkflow(await temporal(), { extractionId: extraction.public_id, workspace }, { agent: extraction.agent, requestId: extraction.request_id, traceId: extraction.trace_id });
  answerAccepted(ctx, `/api/v2/extractions/${extraction.public_id}`, extractionObject(extraction));
}

/** Extractions: structured data drawn from a document's text by runs of an agent, and followed. */
export function extractionsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateExtraction> }>(
    '/api/v2/extractions',
    validate(CreateExtraction),
    authorize({ scopes: ['extractions:create'], endpoint: 'extractions_create', agent: (ctx) => ctx.state.input.body.agent }),
    idempotent('Idempotent-Replay'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findExtraction(workspace.id, resumed) : undefined;
      if (earlier) return accepted(ctx, earlier);

      // Each segment's run holds its own credits when it starts; a workspace with none is refused now.
      await requireCredit(workspace.id);
      const id = resumed ?? mintId('extraction');
      ctx.state.traceId ??= mintTraceId();
      await createExtraction({ id, workspaceId: workspace.id, ...body, requestId: ctx.state.requestId, traceId: ctx.state.traceId }, () => ctx.state.recovery?.begin(id));
      await accepted(ctx, (await findExtraction(workspace.id, id))!);
    },
  );

  router.get<{ input: Input<typeof ListExtractions> }>(
    '/api/v2/extractions',
    validate(ListExtractions),
    authorize({ scopes: ['extractions:read'], endpoint: 'extractions_list' }),
    async (ctx) => {
      const { limit, after, filters } = ctx.state.input.query;
      const rows = await extractionPage(workspaceOf(ctx.state.principal).id, { after, limit: limit + 1, status: filters.status as ExtractionStatus | undefined, document: filters.document });
      ctx.body = listPage(rows, limit, extractionObject);
    },
  );

  router.get<{ input: Input<typeof ReadExtraction> }>(
    '/api/v2/extractions/:id',
    validate(ReadExtraction),
    authorize({ scopes: ['extractions:read'], endpoint: 'extractions_read' }),
    async (ctx) => {
      const extraction = await findExtraction(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!extraction) throw notFound('extraction_not_found');
      ctx.body = extractionObject(extraction);
    },
  );
}
