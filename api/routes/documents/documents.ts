import Router from '@koa/router';
import type { Context } from 'koa';
import { documentDeleted, documentObject, documentWithUploadUrl, grantObject } from '../../../domain/documents';
import { ServiceError } from '../../../domain/errors';
import { mintId } from '../../../domain/ids';
import { deleteDocument, documentPage, findDocument, insertDocument, type StoredDocument } from '../../../db/documents';
import { storeNamed, uploadStore } from '../../../storage';
import { alreadyUploaded, requireCredit, sendDocument, storedObject, transferUrl } from '../../transfers/documents';
import { requireUploaded } from '../../../planning/uploaded';
import { listPage } from '../listPage';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { config } from '../../../infra/config';
import { logger } from '../../../infra/logger';
import { CreateDocument, ListDocuments, ReadDocument } from './schema';

/** The document the path names, in the caller's workspace: another workspace's is the same 404 as a missing one. */
async function documentOf(ctx: Context & { state: AppState & { input: { params: { id: string } } } }): Promise<StoredDocument> {
  const document = await findDocument(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
  if (!document) throw notFound('document_not_found');
  return document;
}

/** A pending document's record carries the URL its bytes go to. */
function withUploadUrl(document: StoredDocument) {
  return documentWithUploadUrl(document, document.status === 'pending' ? transferUrl(document, 'upload') : undefined);
}

/** Documents: create (with an upload grant), list, read, delete, read the content, issue a download grant. */
export function documentsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateDocument> }>(
    '/api/v2/documents',
    validate(CreateDocument),
    authorize({ scopes: ['documents:create'], endpoint: 'documents_create' }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      // A retry of a request that created its document answers with it (and a fresh grant while it waits for its bytes).
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findDocument(workspace.id, resumed) : undefined;
      if (earlier) {
        ctx.status = 201;
        ctx.body = withUploadUrl(earlier);
        return;
      }
      await requireCredit(workspace.id);
      const id = resumed ?? mintId('document');
      await ctx.state.recovery?.begin(id);
      const { quotaBytes } = config().documents;
      const document = await insertDocument({ publicId: id, workspaceId: workspace.id, name: body.name, mimeType: body.mime_type, sizeBytes: body.size_bytes }, quotaBytes);
      if (!document) {
        throw new ServiceError('storage_quota_exceeded', `The workspace's documents would declare more than its storage quota of ${quotaBytes} bytes; delete documents to make room.`);
      }
      ctx.status = 201;
      ctx.body = withUploadUrl(document);
    },
  );

  router.get<{ input: Input<typeof ListDocuments> }>(
    '/api/v2/documents',
    validate(ListDocuments),
    authorize({ scopes: ['documents:read'], endpoint: 'documents_list' }),
    async (ctx) => {
      const { limit, after } = ctx.state.input.query;
      ctx.body = listPage(await documentPage(workspaceOf(ctx.state.principal).id, after, limit + 1), limit, documentObject);
    },
  );

  router.get<{ input: Input<typeof ReadDocument> }>(
    '/api/v2/documents/:id',
    validate(ReadDocument),
    authorize({ scopes: ['documents:read'], endpoint: 'documents_read' }),
    async (ctx) => {
      ctx.body = documentObject(await documentOf(ctx));
    },
  );

  router.get<{ input: Input<typeof ReadDocument> }>(
    '/api/v2/documents/:id/content',
    validate(ReadDocument),
    authorize({ scopes: ['documents:read'], endpoint: 'documents_content' }),
    async (ctx) => {
      await sendDocument(ctx, await documentOf(ctx));
    },
  );

  router.post<{ input: Input<typeof ReadDocument> }>(
    '/api/v2/documents/:id/downloads',
    validate(ReadDocument),
    authorize({ scopes: ['documents:read'], endpoint: 'documents_downloads' }),
    async (ctx) => {
      const document = requireUploaded(await documentOf(ctx));
      await requireCredit(document.workspace_id);
      ctx.status = 201;
      ctx.body = grantObject('download', document.public_id, transferUrl(document, 'download'));
    },
  );

  router.post<{ input: Input<typeof ReadDocument> }>(
    '/api/v2/documents/:id/uploads',
    validate(ReadDocument),
    authorize({ scopes: ['documents:create'], endpoint: 'documents_uploads' }),
    async (ctx) => {
      const document = await documentOf(ctx);
      if (document.status !== 'pending') throw alreadyUploaded();
      await requireCredit(document.workspace_id);
      ctx.status = 201;
      ctx.body = grantObject('upload', document.public_id, transferUrl(document, 'upload'));
    },
  );

  router.delete<{ input: Input<typeof ReadDocument> }>(
    '/api/v2/documents/:id',
    validate(ReadDocument),
    authorize({ scopes: ['documents:delete'], endpoint: 'documents_delete' }),
    async (ctx) => {
      const document = await documentOf(ctx);
      const store = storeNamed(document.storage ?? uploadStore().name);
      // The bytes go first: should the record's deletion fail, a retry finds the record and finishes.
      await store.removeAll(storedObject(document));
      await deleteDocument(document.id);
      // And again after: an upload that finished in between wrote bytes the first pass did not see.
      // (One that finishes later finds no record, and removes its own.)
      await store.removeAll(storedObject(document)).catch((err) => logger.warn({ err: String(err), document: document.public_id }, 'document bytes left after deletion'));
      ctx.body = documentDeleted(document.public_id);
    },
  );
}
