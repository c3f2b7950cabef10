import type { IngestionFields, IngestionStatus } from '../domain/knowledge';
import { pageStart } from './paging';
import { sql, statement, type Sql } from './sql';

/** An ingestion's public fields, with its keys and what decides whether its work was done before. */
export interface IngestionRow extends IngestionFields {
  id: number;
  workspace_id: number;
  document_id: number;
  collection_id: number;
  sha256: string;
  pipeline: string;
}

const COLUMNS = `i.id, i.public_id, i.workspace_id, i.document_id, i.collection_id, d.public_id AS document, c.name AS collection,
                 i.status, i.sha256, i.pipeline, i.bytes_total, i.bytes_processed, i.chunks_indexed, i.reused,
                 i.error_code, i.error_message, i.created_at, i.started_at, i.completed_at`;
const FROM = 'knowledge_ingestions i JOIN documents d ON d.id = i.document_id JOIN knowledge_collections c ON c.id = i.collection_id';

const INSERT = statement(
  `INSERT INTO knowledge_ingestions (public_id, workspace_id, document_id, collection_id, sha256, pipeline, bytes_total, request_id, trace_id)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
   ON CONFLICT (collection_id, document_id) WHERE status IN ('queued', 'running') DO NOTHING
   RETURNING id`,
);
const IN_FLIGHT = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE i.collection_id = $1 AND i.document_id = $2 AND i.status IN ('queued', 'running')`);
const FIND = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE i.public_id = $1 AND i.workspace_id = $2`);
const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE i.public_id = $1`);
const ANCHOR = statement('SELECT id FROM knowledge_ingestions WHERE public_id = $1 AND workspace_id = $2');
const PAGE = statement(
  `SELECT ${COLUMNS} FROM ${FROM}
    WHERE i.workspace_id = $1 AND i.id < $2 AND ($3::text IS NULL OR i.status = $3) AND ($4::text IS NULL OR d.public_id = $4)
    ORDER BY i.id DESC LIMIT $5`,
);
const START = statement(`UPDATE knowledge_ingestions SET status = 'running', started_at = COALESCE(started_at, now()) WHERE public_id = $1 AND status IN ('queued', 'running')`);
const PROGRESS = statement('UPDATE knowledge_ingestions SET bytes_processed = $2, chunks_indexed = $3 WHERE id = $1');
const FAIL = statement(
  `UPDATE knowledge_ingestions SET status = 'failed', error_code = $2, error_message = $3, completed_at = now()
    WHERE id = $1 AND status IN ('queued', 'running')`,
);

export async function insertIngestion(
  i: { publicId: string; workspaceId: number; documentKey: number; collectionKey: number; sha256: string; pipeline: string; bytesTotal: number; requestId: string; traceId: string },
  on: Sql = sql,
): Promise<boolean> {
  const rows = await on.rows(INSERT, [i.publicId, i.workspaceId, i.documentKey, i.collectionKey, i.sha256, i.pipeline, i.bytesTotal, i.requestId, i.traceId]);
  return rows.length === 1;
}

/** The ingestion of this document into this collection still queued or running, if any. */
export async function ingestionInFlight(collectionKey: number, documentKey: number, on: Sql = sql): Promise<IngestionRow | undefined> {
  const [row] = await on.rows<IngestionRow>(IN_FLIGHT, [collectionKey, documentKey]);
  return row;
}

/** The workspace's ingestion; undefined for a missing one and another workspace's alike. */
export async function findIngestion(workspaceId: number, publicId: string, on: Sql = sql): Promise<IngestionRow | undefined> {
  const [row] = await on.rows<IngestionRow>(FIND, [publicId, workspaceId]);
  return row;
}

/** For the workflow's activities, which act on the ingestion they were started for. */
export async function ingestionById(publicId: string, on: Sql = sql): Promise<IngestionRow | undefined> {
  const [row] = await on.rows<IngestionRow>(BY_PUBLIC_ID, [publicId]);
  return row;
}

/** Up to `limit` ingestions, newest first, after `after`, optionally of one status and one document; undefined when `after` is not the workspace's. */
export async function ingestionPage(
  workspaceId: number,
  q: { after?: string; status?: IngestionStatus; document?: string; limit: number },
  on: Sql = sql,
): Promise<IngestionRow[] | undefined> {
  const before = await pageStart(ANCHOR, workspaceId, q.after, on);
  return before === undefined ? undefined : on.rows<IngestionRow>(PAGE, [workspaceId, before, q.status ?? null, q.document ?? null, q.limit]);
}

/** queued → running; false when the ingestion is gone (its document was deleted) or already over. */
export async function startIngestion(publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(START, [publicId])) === 1;
}

export async function recordProgress(ingestionKey: number, bytesProcessed: number, chunksIndexed: number, on: Sql = sql): Promise<void> {
  await on.rowCount(PROGRESS, [ingestionKey, bytesProcessed, chunksIndexed]);
}

/** running → failed, once. */
export async function failIngestionRecord(ingestionKey: number, error: { code: string; message: string }, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(FAIL, [ingestionKey, error.code, error.message])) === 1;
}
