import { sql, statement, type Sql } from './sql';

/**
 * Chunks of knowledge and the full-text index over them. Retrieval reads a document's chunks only
 * through its collection entry, which names one ingestion: chunks an ingestion is still writing are
 * invisible until it completes and the entry switches to them.
 */

export interface ChunkBatch {
  ingestionKey: number;
  workspaceId: number;
  collectionKey: number;
  documentKey: number;
  publicIds: string[];
  seqs: number[];
  contents: string[];
}

const INSERT_BATCH = statement(
  `INSERT INTO knowledge_chunks (public_id, ingestion_id, workspace_id, collection_id, document_id, seq, content)
   SELECT unnest($1::text[]), $2, $3, $4, $5, unnest($6::int[]), unnest($7::text[])`,
);
const DELETE_OF_INGESTION = statement('DELETE FROM knowledge_chunks WHERE ingestion_id = $1');
const REUSABLE = statement(
  `SELECT p.chunks_indexed AS "chunksIndexed" FROM knowledge_entries e JOIN knowledge_ingestions p ON p.id = e.ingestion_id
    WHERE e.collection_id = $1 AND e.document_id = $2 AND p.sha256 = $3 AND p.pipeline = $4`,
);
// One statement, driven by the ingestion's own running → completed: the entry switches to it, the
// superseded ingestion's chunks go, and it completes. Retrieval sees the old chunks or the new ones,
// never a mix or none; an ingestion that is not running changes nothing.
const COMPLETE = statement(
  `WITH done AS (
     UPDATE knowledge_ingestions SET status = 'completed', bytes_processed = bytes_total, completed_at = now()
      WHERE id = $1 AND status = 'running'
      RETURNING id, collection_id, document_id
   ), previous AS (
     SELECT e.ingestion_id FROM knowledge_entries e JOIN done ON e.collection_id = done.collection_id AND e.document_id = done.document_id FOR UPDATE OF e
   ), entry AS (
     INSERT INTO knowledge_entries (collection_id, document_id, ingestion_id) SELECT collection_id, document_id, id FROM done
     ON CONFLICT (collection_id, document_id) DO UPDATE SET ingestion_id = EXCLUDED.ingestion_id
   ), superseded AS (
     DELETE FROM knowledge_chunks WHERE ingestion_id IN (SELECT ingestion_id FROM previous WHERE ingestion_id <> $1)
   )
   SELECT id FROM done`,
);
const COMPLETE_REUSED = statement(
  `UPDATE knowledge_ingestions SET status = 'completed', reused = true, chunks_indexed = $2, bytes_processed = bytes_total, completed_at = now()
    WHERE id = $1 AND status = 'running'`,
);
const COLLECTIONS = statement('SELECT id FROM knowledge_collections WHERE workspace_id = $1 AND name = ANY($2::text[])');
// Ranked by ts_rank_cd (cover density: matched words close together rank higher), among the
// RANK_CANDIDATES best by the cheaper ts_rank: a query whose words are common matches most of a
// collection, and cover density over all of it cost 100 ms for 12,000 chunks; this costs about 20.
const RANK_CANDIDATES = 100;
const SEARCH = statement(
  `SELECT chunk, document, name, text FROM (
     SELECT c.id, c.public_id AS chunk, d.public_id AS document, d.name, c.content AS text, c.tsv, q
       FROM knowledge_chunks c
       JOIN knowledge_entries e ON e.ingestion_id = c.ingestion_id AND e.document_id = c.document_id AND e.collection_id = c.collection_id
       JOIN documents d ON d.id = c.document_id,
            websearch_to_tsquery('english', $3) q
      WHERE c.workspace_id = $1 AND c.collection_id = ANY($2::bigint[]) AND ($4::text IS NULL OR d.public_id = $4) AND c.tsv @@ q
      ORDER BY ts_rank(c.tsv, q) DESC, c.id
      LIMIT ${RANK_CANDIDATES}
   ) candidates
   ORDER BY ts_rank_cd(tsv, q) DESC, id
   LIMIT $5`,
);
const INDEXED_IN = statement(
  `SELECT 1 FROM knowledge_entries e JOIN knowledge_collections c ON c.id = e.collection_id JOIN documents d ON d.id = e.document_id
    WHERE c.workspace_id = $1 AND c.name = ANY($2::text[]) AND d.public_id = $3 LIMIT 1`,
);

export async function insertChunks(b: ChunkBatch, on: Sql = sql): Promise<void> {
  await on.rowCount(INSERT_BATCH, [b.publicIds, b.ingestionKey, b.workspaceId, b.collectionKey, b.documentKey, b.seqs, b.contents]);
}

/** The chunks an ingestion wrote (a retried attempt starts over; a failed one leaves none). */
export async function deleteIngestionChunks(ingestionKey: number, on: Sql = sql): Promise<void> {
  await on.rowCount(DELETE_OF_INGESTION, [ingestionKey]);
}

/** The chunk count of the collection's entry for the document when it was made from these bytes by this pipeline. */
export async function reusableEntry(collectionKey: number, documentKey: number, sha256: string, pipeline: string, on: Sql = sql): Promise<number | undefined> {
  const [row] = await on.rows<{ chunksIndexed: number }>(REUSABLE, [collectionKey, documentKey, sha256, pipeline]);
  return row?.chunksIndexed;
}

/** running → completed, with its chunks now the document's in the collection; false when it was not running. */
export async function completeIngestionRecord(ingestionKey: number, on: Sql = sql): Promise<boolean> {
  return (await on.rows(COMPLETE, [ingestionKey])).length === 1;
}

/** running → completed with the chunks already indexed from the same bytes: no work done. */
export async function completeReusedIngestion(ingestionKey: number, chunksIndexed: number, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(COMPLETE_REUSED, [ingestionKey, chunksIndexed])) === 1;
}

/** The workspace's collections of these names (the ones that exist). */
export async function collectionKeys(workspaceId: number, names: string[], on: Sql = sql): Promise<number[]> {
  return (await on.rows<{ id: number }>(COLLECTIONS, [workspaceId, names])).map((r) => r.id);
}

/** The best-ranked chunks for a websearch query, in these collections (and this document, if given). */
export async function searchChunks(
  q: { workspaceId: number; collectionKeys: number[]; query: string; document?: string; limit: number },
  on: Sql = sql,
): Promise<{ chunk: string; document: string; name: string; text: string }[]> {
  return on.rows(SEARCH, [q.workspaceId, q.collectionKeys, q.query, q.document ?? null, q.limit]);
}

/** Whether the document is knowledge of any of these collections of the workspace. */
export async function documentIndexedIn(workspaceId: number, collections: string[], document: string, on: Sql = sql): Promise<boolean> {
  return (await on.rows(INDEXED_IN, [workspaceId, collections, document])).length > 0;
}
