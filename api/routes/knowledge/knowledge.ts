import Router from '@koa/router';
import type { Context } from 'koa';
import { mintId, mintTraceId } from '../../../domain/ids';
import { MAX_PASSAGES, type IngestionStatus } from '../../../domain/knowledge';
import { ingestionObject, passageList } from '../../../domain/knowledgeRecords';
import { collectionKeys, searchChunks } from '../../../db/knowledgeChunks';
import { findIngestion, ingestionPage, type IngestionRow } from '../../../db/knowledgeIngestions';
import { createIngestion } from '../../../planning/ingestions';
import { temporal } from '../../../infra/temporalClient';
import { startIngestionWorkflow } from '../../../workflowClients/knowledgeIngestion.client';
import { answerAccepted } from '../../execution/answerAccepted';
import { listPage } from '../listPage';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateIngestion, ListIngestions, ReadIngestion, SearchKnowledge } from './schema';

type Ctx = Context & { state: AppState };

/** Starts the ingestion's workflow (or finds it started) and answers 202 with the record: the caller polls it. */
async function accepted(ctx: Ctx, ingestion: IngestionRow): Promise<void> {
  await startIngestionWorkflow(await temporal(), { ingestionId: ingestion.public_id, workspaceId: workspaceOf(ctx.state.principal).publicId }, { requestId: ctx.state.requestId, traceId: ctx.state.traceId ?? '' });
  answerAccepted(ctx, `/api/v2/knowledge/ingestions/${ingestion.public_id}`, ingestionObject(ingestion));
}

/** Knowledge ingestions: turn an uploaded document into knowledge of a collection, and follow it; search it. */
export function knowledgeRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateIngestion> }>(
    '/api/v2/knowledge/ingestions',
    validate(CreateIngestion),
    authorize({ scopes: ['knowledge:write'], endpoint: 'knowledge_ingestions_create' }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findIngestion(workspace.id, resumed) : undefined;
      if (earlier) return accepted(ctx, earlier);

      const id = resumed ?? mintId('ingestion');
      ctx.state.traceId ??= mintTraceId();
      const ingestion = await createIngestion({ id, workspaceId: workspace.id, document: body.document, collection: body.collection, requestId: ctx.state.requestId, traceId: ctx.state.traceId }, () => ctx.state.recovery?.begin(id));
      await accepted(ctx, ingestion);
    },
  );

  router.get<{ input: Input<typeof ListIngestions> }>(
    '/api/v2/knowledge/ingestions',
    validate(ListIngestions),
    authorize({ scopes: ['knowledge:read'], endpoint: 'knowledge_ingestions_list' }),
    async (ctx) => {
      const { limit, after, filters } = ctx.state.input.query;
      const rows = await ingestionPage(workspaceOf(ctx.state.principal).id, { after, limit: limit + 1, status: filters.status as IngestionStatus | undefined, document: filters.document });
      ctx.body = listPage(rows, limit, ingestionObject);
    },
  );

  router.get<{ input: Input<typeof ReadIngestion> }>(
    '/api/v2/knowledge/ingestions/:id',
    validate(ReadIngestion),
    authorize({ scopes: ['knowledge:read'], endpoint: 'knowledge_ingestions_read' }),
    async (ctx) => {
      const ingestion = await findIngestion(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!ingestion) throw notFound('ingestion_not_found');
      ctx.body = ingestionObject(ingestion);
    },
  );

  // The passages a run would retrieve, for a query of the caller's: the same full-text index and ranking.
  router.post<{ input: Input<typeof SearchKnowledge> }>(
    '/api/v2/knowledge/search',
    validate(SearchKnowledge),
    authorize({ scopes: ['knowledge:read'], endpoint: 'knowledge_search' }),
    async (ctx) => {
      const workspaceId = workspaceOf(ctx.state.principal).id;
      const { query, collections, limit, document } = ctx.state.input.body;
      // Collections that do not exist hold nothing: the answer is an empty list, not a 404 that would confirm names.
      const keys = await collectionKeys(workspaceId, collections);
      const rows = keys.length ? await searchChunks({ workspaceId, collectionKeys: keys, query, document, limit: limit ?? MAX_PASSAGES }) : [];
      ctx.body = passageList(rows);
    },
  );
}
