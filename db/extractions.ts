import type { ExtractionFields, ExtractionStatus } from '../domain/extractions';
import { pageStart } from './paging';
import { sql, statement, type Sql } from './sql';

export interface ExtractionRow extends ExtractionFields {
  id: number;
  workspace_id: number;
  document_id: number | null;
  agent_id: number;
  request_id: string;
  trace_id: string;
}

const COLUMNS = `x.id, x.public_id, x.workspace_id, x.document_id, x.document_public_id AS document, a.public_id AS agent, x.agent_id, x.status,
                 x.schema, x.instructions, x.result, x.error_code, x.error_message, x.segments_total, x.segments_done, x.runs,
                 x.request_id, x.trace_id, x.created_at, x.started_at, x.completed_at`;
const FROM = 'extractions x JOIN agents a ON a.id = x.agent_id';

const INSERT = statement(
  `INSERT INTO extractions (public_id, workspace_id, document_id, document_public_id, agent_id, schema, instructions, request_id, trace_id)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
);
const FIND = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE x.public_id = $1 AND x.workspace_id = $2`);
const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE x.public_id = $1`);
const ANCHOR = statement('SELECT id FROM extractions WHERE public_id = $1 AND workspace_id = $2');
const PAGE = statement(
  `SELECT ${COLUMNS} FROM ${FROM}
    WHERE x.workspace_id = $1 AND x.id < $2 AND ($3::text IS NULL OR x.status = $3) AND ($4::text IS NULL OR x.document_public_id = $4)
    ORDER BY x.id DESC LIMIT $5`,
);
const START = statement(
  `UPDATE extractions SET status = 'running', segments_total = $2, runs = $3, started_at = COALESCE(started_at, now())
    WHERE public_id = $1 AND status IN ('queued', 'running')`,
);
const PROGRESS = statement('UPDATE extractions SET segments_done = GREATEST(segments_done, $2) WHERE public_id = $1');
const SETTLE = statement(
  `UPDATE extractions SET status = $2, result = $3, error_code = $4, error_message = $5, completed_at = now()
    WHERE public_id = $1 AND status IN ('queued', 'running')`,
);

export async function insertExtraction(
  x: { publicId: string; workspaceId: number; documentKey: number; document: string; agentKey: number; schema: Record<string, unknown>; instructions?: string; requestId: string; traceId: string },
  on: Sql = sql,
): Promise<void> {
  await on.rowCount(INSERT, [x.publicId, x.workspaceId, x.documentKey, x.document, x.agentKey, JSON.stringify(x.schema), x.instructions ?? null, x.requestId, x.traceId]);
}

/** The workspace's extraction; undefined for a missing one and another workspace's alike. */
export async function findExtraction(workspaceId: number, publicId: string, on: Sql = sql): Promise<ExtractionRow | undefined> {
  const [row] = await on.rows<ExtractionRow>(FIND, [publicId, workspaceId]);
  return row;
}

/** For the workflow's activities, which act on the extraction they were started for. */
export async function extractionById(publicId: string, on: Sql = sql): Promise<ExtractionRow | undefined> {
  const [row] = await on.rows<ExtractionRow>(BY_PUBLIC_ID, [publicId]);
  return row;
}

/** Up to `limit` extractions, newest first, after `after`, optionally of one status and one document; undefined when `after` is not the workspace's. */
export async function extractionPage(
  workspaceId: number,
  q: { after?: string; status?: ExtractionStatus; document?: string; limit: number },
  on: Sql = sql,
): Promise<ExtractionRow[] | undefined> {
  const before = await pageStart(ANCHOR, workspaceId, q.after, on);
  return before === undefined ? undefined : on.rows<ExtractionRow>(PAGE, [workspaceId, before, q.status ?? null, q.document ?? null, q.limit]);
}

/** queued → running, with its segments' run ids. */
export async function startExtractionRecord(publicId: string, runs: string[], on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(START, [publicId, runs.length, runs])) === 1;
}

export async function recordExtractionProgress(publicId: string, segmentsDone: number, on: Sql = sql): Promise<void> {
  await on.rowCount(PROGRESS, [publicId, segmentsDone]);
}

/** → completed with the merged result, or → failed; once. */
export async function settleExtractionRecord(publicId: string, s: { status: 'completed' | 'failed'; result?: unknown; error?: { code: string; message: string } }, on: Sql = sql): Promise<void> {
  await on.rowCount(SETTLE, [publicId, s.status, s.result === undefined ? null : JSON.stringify(s.result), s.error?.code ?? null, s.error?.message ?? null]);
}
