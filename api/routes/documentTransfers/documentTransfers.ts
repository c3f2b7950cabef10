import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { documentObject } from '../../../domain/documents';
import { invalidRequest, ServiceError } from '../../../domain/errors';
import { claimUpload, finishUpload, findGrantedDocument, releaseUpload } from '../../../db/documents';
import { logger } from '../../../infra/logger';
import { uploadStore } from '../../../storage';
import { alreadyUploaded, sendDocument, storedObject } from '../../transfers/documents';
import { redeemGrant } from '../../middleware/redeemGrant';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { tooLarge, UploadMeter } from '../../transfers/uploadMeter';
import { RedeemGrant } from './schema';

type Ctx = Context & { state: AppState };

/** Errors a stream sees when the client goes away mid-body (directly, or as the cause of an aborted storage request). */
const CLIENT_GONE = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE']);
function clientWentAway(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown; message?: string } | undefined; e; e = e.cause as typeof e) {
    if ((e.code && CLIENT_GONE.has(e.code)) || e.message === 'aborted') return true;
  }
  return false;
}

/**
 * Redeems an upload grant with the raw bytes, streamed to storage (never held whole): exactly the
 * declared size, hashed on the way. One upload of a document at a time: another request on the same
 * grant meanwhile gets 409 before a byte is stored; an upload that fails lets the next one begin.
 */
async function upload(ctx: Ctx): Promise<void> {
  const document = ctx.state.document!;
  if (document.status !== 'pending') throw alreadyUploaded();
  const declared = ctx.request.length;
  if (declared !== undefined && declared > document.size_bytes) throw tooLarge(document.size_bytes);
  if (declared !== undefined && declared < document.size_bytes) throw invalidRequest(`The upload is ${declared} bytes; the document declared size_bytes ${document.size_bytes}.`);
  if (!(await claimUpload(document.id))) {
    if ((await findGrantedDocument(document.workspace, document.public_id))?.status !== 'pending') throw alreadyUploaded();
    throw new ServiceError('document_upload_in_progress', 'Another upload of this document is in progress; retry once it has ended.');
  }
  try {
    await streamToStorage(ctx, document);
  } catch (err) {
    await releaseUpload(document.id).catch(() => undefined);
    throw err;
  }
}

/** The bytes, into storage under a key of their own, and the document uploaded once they are all there. */
async function streamToStorage(ctx: Ctx, document: NonNullable<AppState['document']>): Promise<void> {
  const store = uploadStore();
  const object = storedObject(document, randomUUID());
  const meter = new UploadMeter(document.size_bytes);
  try {
    await store.write(object, pipeline(ctx.req, meter, () => undefined), document.size_bytes);
  } catch (err) {
    await store.remove(object).catch(() => undefined);
    if (meter.failure) throw meter.failure;
    if (!(await findGrantedDocument(document.workspace, document.public_id))) throw notFound('document_not_found');
    // The client going away mid-upload is not the service's failure; a storage failure is, and is logged as one.
    if (clientWentAway(err)) throw invalidRequest('The upload was interrupted before its end.');
    throw err;
  }
  if (!(await finishUpload(document.id, { sha256: meter.digest(), storage: store.name, storageKey: object.uploadKey }))) {
    // Another upload finished first, or the document was deleted meanwhile.
    await store.remove(object).catch(() => undefined);
    if (!(await findGrantedDocument(document.workspace, document.public_id))) throw notFound('document_not_found');
    throw alreadyUploaded();
  }
  await store.removeOthers(object).catch((err) => logger.warn({ err: String(err), document: document.public_id }, 'earlier upload attempts not removed'));
  ctx.remove('Connection');
  ctx.body = documentObject((await findGrantedDocument(document.workspace, document.public_id)) ?? document);
}

/** The token-addressed transfers (no credential but the token); mounted before the JSON body parser. */
export function documentTransfersRoutes(router: Router<AppState>): void {
  // POST exists for clients that cannot PUT: the same capability and checks.
  for (const method of ['put', 'post'] as const) {
    router[method]<{ input: Input<typeof RedeemGrant> }>('/api/v2/documents/uploads/:token', validate(RedeemGrant), redeemGrant('upload'), upload);
  }

  router.get<{ input: Input<typeof RedeemGrant> }>('/api/v2/documents/downloads/:token', validate(RedeemGrant), redeemGrant('download'), (ctx) => sendDocument(ctx, ctx.state.document!));
}
