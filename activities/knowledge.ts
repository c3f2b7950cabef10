import { CancelledFailure, Context } from '@temporalio/activity';
import { Chunker } from '../domain/chunking';
import { mintId } from '../domain/ids';
import { extractorFor } from '../domain/knowledge';
import { findDocument } from '../db/documents';
import { completeIngestionRecord, completeReusedIngestion, deleteIngestionChunks, insertChunks, reusableEntry } from '../db/knowledgeChunks';
import { failIngestionRecord, ingestionById, recordProgress, startIngestion, type IngestionRow } from '../db/knowledgeIngestions';
import { transaction } from '../db/sql';
import { storeNamed } from '../storage';
import { heartbeating } from './bounded';
import { extractText } from './extract';

/** Chunks written (and progress recorded) per statement. */
const CHUNK_BATCH = 250;

/** What an ingestion found when it began. */
export type IngestionStart = { state: 'gone' } | { state: 'reusable'; chunks: number } | { state: 'index' };

/** An ingestion whose document was deleted meanwhile: its record went with it (ON DELETE CASCADE). */
const FOREIGN_KEY_VIOLATION = '23503';
const isGone = (err: unknown) => (err as { code?: string }).code === FOREIGN_KEY_VIOLATION;

/**
 * queued → running. The same bytes already indexed for this document in this collection by this
 * pipeline need no work: the ingestion completes from them.
 */
export async function beginIngestion(ingestionId: string): Promise<IngestionStart> {
  if (!(await startIngestion(ingestionId))) return { state: 'gone' };
  const ingestion = (await ingestionById(ingestionId))!;
  const chunks = await reusableEntry(ingestion.collection_id, ingestion.document_id, ingestion.sha256, ingestion.pipeline);
  return chunks === undefined ? { state: 'index' } : { state: 'reusable', chunks };
}

async function writeBatch(ingestion: IngestionRow, seq: number, contents: string[], bytesRead: number): Promise<void> {
  await transaction(async (sql) => {
    await insertChunks(
      {
        ingestionKey: ingestion.id,
        workspaceId: ingestion.workspace_id,
        collectionKey: ingestion.collection_id,
        documentKey: ingestion.document_id,
        publicIds: contents.map(() => mintId('chunk')),
        seqs: contents.map((_, i) => seq + i),
        contents,
      },
      sql,
    );
    await recordProgress(ingestion.id, bytesRead, seq + contents.length, sql);
  });
}

/**
 * Extracts the document's text, chunks it and writes the chunks, recording progress with each batch.
 * It heartbeats all along, parsing included; an attempt the server has given up on (its heartbeat
 * timed out, so another attempt runs) sees that as a cancellation and writes nothing more. The chunks
 * stay invisible to retrieval until completeIngestion. A retried attempt starts over. Unreadable
 * content fails for good (invalid_request); anything else is retried.
 */
export function indexDocument(ingestionId: string): Promise<{ state: 'gone' } | { state: 'indexed'; chunks: number }> {
  return heartbeating(async () => {
    const ctx = Context.current();
    const ingestion = await ingestionById(ingestionId);
    const document = ingestion && (await findDocument(ingestion.workspace_id, ingestion.document));
    if (!ingestion || !document?.storage || !document.storage_key) return { state: 'gone' as const };
    await deleteIngestionChunks(ingestion.id);
    const bytes = await storeNamed(document.storage).read({ documentKey: document.id, workspace: document.workspace, document: document.public_id, uploadKey: document.storage_key });
    const chunker = new Chunker();
    let batch: string[] = [];
    let written = 0;
    let bytesRead = 0;
    const add = async (chunks: string[]) => {
      for (const chunk of chunks) {
        batch.push(chunk);
        if (batch.length === CHUNK_BATCH) await flush();
      }
    };
    const flush = async () => {
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the ingestion attempt was given up');
      await writeBatch(ingestion, written, batch, bytesRead);
      written += batch.length;
      batch = [];
    };
    try {
      for await (const piece of extractText(extractorFor(document.mime_type)!, bytes, ctx.cancellationSignal)) {
        bytesRead = piece.bytesRead;
        await add(chunker.push(piece.text));
      }
      await add(chunker.end());
      if (batch.length > 0) await flush();
    } catch (err) {
      if (isGone(err)) return { state: 'gone' as const };
      throw err;
    } finally {
      bytes.destroy();
    }
    return { state: 'indexed' as const, chunks: written };
  });
}

/** running → completed: the document's chunks in the collection become this ingestion's, atomically. */
export async function completeIngestion(c: { ingestionId: string; reusedChunks?: number }): Promise<void> {
  const ingestion = await ingestionById(c.ingestionId);
  if (!ingestion) return;
  if (c.reusedChunks !== undefined) await completeReusedIngestion(ingestion.id, c.reusedChunks);
  else await completeIngestionRecord(ingestion.id);
}

/** running → failed, leaving none of its chunks behind. */
export async function failIngestion(f: { ingestionId: string; code: string; message: string }): Promise<void> {
  const ingestion = await ingestionById(f.ingestionId);
  if (!ingestion) return;
  await transaction(async (sql) => {
    await deleteIngestionChunks(ingestion.id, sql);
    await failIngestionRecord(ingestion.id, { code: f.code, message: f.message }, sql);
  });
}
