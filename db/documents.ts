import type { DocumentRow } from '../domain/documents';
import { pageStart } from './paging';
import { sql, statement, transaction, type Sql } from './sql';

/** A document with what its storage needs: its key (for parts), its workspace and where its bytes are. */
export interface StoredDocument extends DocumentRow {
  id: number;
  workspace_id: number;
  workspace: string;
  storage: 'postgres' | 's3' | null;
  storage_key: string | null;
}

const COLUMNS = `d.id, d.public_id, d.workspace_id, w.public_id AS workspace, d.name, d.mime_type, d.size_bytes, d.status, d.sha256,
                 d.storage, d.storage_key, d.created_at, d.uploaded_at`;

const EXISTS = statement('SELECT 1 FROM documents WHERE public_id = $1 AND workspace_id = $2');
// Documents of one workspace are created one at a time (a transaction-scoped advisory lock), so the
// quota check sees every earlier creation: one statement's snapshot would predate the lock it waited for.
const LOCK_WORKSPACE_DOCUMENTS = statement('SELECT pg_advisory_xact_lock(4201, $1::int)');
const INSERT = statement(
  `WITH d AS (
     INSERT INTO documents (public_id, workspace_id, name, mime_type, size_bytes)
     SELECT $1::text, $2::bigint, $3::text, $4::text, $5::bigint WHERE (SELECT COALESCE(sum(size_bytes), 0) FROM documents WHERE workspace_id = $2) + $5 <= $6::bigint
     RETURNING *
   )
   SELECT ${COLUMNS} FROM d JOIN workspaces w ON w.id = d.workspace_id`,
);
const FIND = statement(`SELECT ${COLUMNS} FROM documents d JOIN workspaces w ON w.id = d.workspace_id WHERE d.public_id = $1 AND d.workspace_id = $2`);
const FIND_FOR_GRANT = statement(`SELECT ${COLUMNS} FROM documents d JOIN workspaces w ON w.id = d.workspace_id WHERE d.public_id = $1 AND w.public_id = $2`);
const ANCHOR = statement('SELECT id FROM documents WHERE public_id = $1 AND workspace_id = $2');
const PAGE = statement(`SELECT ${COLUMNS} FROM documents d JOIN workspaces w ON w.id = d.workspace_id WHERE d.workspace_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3`);
const FINISH_UPLOAD = statement(
  `UPDATE documents SET status = 'uploaded', sha256 = $2, storage = $3, storage_key = $4, uploaded_at = now()
    WHERE id = $1 AND status = 'pending'`,
);
const DELETE = statement('DELETE FROM documents WHERE id = $1');

/** Whether the workspace has this document. */
export async function documentExists(workspaceId: number, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rows(EXISTS, [publicId, workspaceId])).length > 0;
}

/** The new document; undefined when the workspace's documents would declare more than `quotaBytes` with it. */
export function insertDocument(d: { publicId: string; workspaceId: number; name: string; mimeType: string; sizeBytes: number }, quotaBytes: number): Promise<StoredDocument | undefined> {
  return transaction(async (tx) => {
    await tx.rows(LOCK_WORKSPACE_DOCUMENTS, [d.workspaceId]);
    const [row] = await tx.rows<StoredDocument>(INSERT, [d.publicId, d.workspaceId, d.name, d.mimeType, d.sizeBytes, quotaBytes]);
    return row;
  });
}

// An upload that began this long ago and never finished (its API process died) no longer holds the document.
const UPLOAD_CLAIM_S = 30 * 60;
const CLAIM_UPLOAD = statement(
  `UPDATE documents SET upload_started_at = now()
    WHERE id = $1 AND status = 'pending' AND (upload_started_at IS NULL OR upload_started_at < now() - make_interval(secs => ${UPLOAD_CLAIM_S}))`,
);
const RELEASE_UPLOAD = statement(`UPDATE documents SET upload_started_at = NULL WHERE id = $1 AND status = 'pending'`);

/** Whether this request may upload the document's bytes now: one upload at a time per document. */
export async function claimUpload(documentKey: number, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(CLAIM_UPLOAD, [documentKey])) === 1;
}

/** An upload that failed lets the next one begin. */
export async function releaseUpload(documentKey: number, on: Sql = sql): Promise<void> {
  await on.rowCount(RELEASE_UPLOAD, [documentKey]);
}

/** The workspace's document; undefined for a missing one and another workspace's alike. */
export async function findDocument(workspaceId: number, publicId: string, on: Sql = sql): Promise<StoredDocument | undefined> {
  const [row] = await on.rows<StoredDocument>(FIND, [publicId, workspaceId]);
  return row;
}

/** The document a grant names, re-read at redemption: both its id and its workspace must match. */
export async function findGrantedDocument(workspacePublicId: string, publicId: string, on: Sql = sql): Promise<StoredDocument | undefined> {
  const [row] = await on.rows<StoredDocument>(FIND_FOR_GRANT, [publicId, workspacePublicId]);
  return row;
}

/** Up to `limit` documents of the workspace, newest first, after `after`; undefined when `after` is not the workspace's. */
export async function documentPage(workspaceId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<StoredDocument[] | undefined> {
  const before = await pageStart(ANCHOR, workspaceId, after, on);
  return before === undefined ? undefined : on.rows<StoredDocument>(PAGE, [workspaceId, before, limit]);
}

/** pending → uploaded, once: false when another upload finished first or the document is gone. */
export async function finishUpload(documentKey: number, u: { sha256: string; storage: 'postgres' | 's3'; storageKey: string }, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(FINISH_UPLOAD, [documentKey, u.sha256, u.storage, u.storageKey])) === 1;
}

/** Deletes the record; its parts, ingestions and chunks go with it (ON DELETE CASCADE). */
export async function deleteDocument(documentKey: number, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(DELETE, [documentKey])) === 1;
}
