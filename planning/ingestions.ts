import { invalidRequest } from '../domain/errors';
import { mintId } from '../domain/ids';
import { EXTRACTORS, extractorFor, PIPELINE } from '../domain/knowledge';
import { findDocument } from '../db/documents';
import { collectionNamed } from '../db/knowledgeCollections';
import { findIngestion, ingestionInFlight, insertIngestion, type IngestionRow } from '../db/knowledgeIngestions';
import { requireUploaded } from './uploaded';
import { notFound } from '../callers/tenancy';

/**
 * Records the ingestion, or finds the one of this document into this collection still in flight: one
 * runs at a time, and a second request joins it. One that ends between the two looks is looked for again.
 */
async function recordIngestion(i: Parameters<typeof insertIngestion>[0]): Promise<IngestionRow> {
  for (let attempt = 0; attempt < 3; attempt++) {
    if (await insertIngestion(i)) return (await findIngestion(i.workspaceId, i.publicId))!;
    const inFlight = await ingestionInFlight(i.collectionKey, i.documentKey);
    if (inFlight) return inFlight;
  }
  throw new Error('an ingestion could neither be recorded nor found in flight');
}

/**
 * An ingestion of the workspace's document into its collection (created with its first ingestion):
 * the document must exist (404) with content (409) of a type that can be read (400). `begin` records
 * the recovery point once the request is known to be good. Used by the endpoint and by
 * knowledge.ingest jobs; the caller starts the workflow.
 */
export async function createIngestion(
  c: { id: string; workspaceId: number; document: string; collection: string; requestId: string; traceId: string },
  begin: () => Promise<void> | undefined = () => undefined,
): Promise<IngestionRow> {
  const document = await findDocument(c.workspaceId, c.document);
  if (!document) throw notFound('document_not_found');
  requireUploaded(document);
  if (!extractorFor(document.mime_type)) {
    throw invalidRequest(`A ${document.mime_type} document cannot be ingested; supported types: ${Object.keys(EXTRACTORS).join(', ')}.`);
  }
  await begin();
  const collectionKey = await collectionNamed(c.workspaceId, c.collection, () => mintId('collection'));
  return recordIngestion({
    publicId: c.id,
    workspaceId: c.workspaceId,
    documentKey: document.id,
    collectionKey,
    sha256: document.sha256!,
    pipeline: PIPELINE,
    bytesTotal: document.size_bytes,
    requestId: c.requestId,
    traceId: c.traceId,
  });
}
