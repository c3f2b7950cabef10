import type { RunInput } from '../domain/runs';
import type { ReportFields, ReportFormat } from '../domain/reports';
import { pageStart } from './paging';
import { sql, statement, type Sql } from './sql';

/** A report with what its workflow is started from (kept, so a retried request can start it again). */
export interface ReportRow extends ReportFields {
  id: number;
  run_input: RunInput;
}

const COLUMNS = `r.id, r.public_id, a.public_id AS agent, r.run_public_id AS run, r.name, r.format, r.status, r.result,
                 r.error_code, r.error_message, r.metadata, r.created_at, r.completed_at, r.run_input`;
const FROM = 'reports r JOIN agents a ON a.id = r.agent_id';

const INSERT = statement(
  `INSERT INTO reports (public_id, workspace_id, agent_id, run_public_id, name, format, metadata, request_id, trace_id, run_input)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
);
const FIND = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE r.public_id = $1 AND r.workspace_id = $2`);
const ANCHOR = statement('SELECT id FROM reports WHERE public_id = $1 AND workspace_id = $2');
const PAGE = statement(`SELECT ${COLUMNS} FROM ${FROM} WHERE r.workspace_id = $1 AND r.id < $2 ORDER BY r.id DESC LIMIT $3`);
const START = statement(`UPDATE reports SET status = 'running' WHERE public_id = $1 AND status = 'queued'`);
const SETTLE = statement(
  `UPDATE reports SET status = $2, result = $3, error_code = $4, error_message = $5, completed_at = now()
    WHERE public_id = $1 AND status IN ('queued', 'running')`,
);

export async function insertReport(
  r: { publicId: string; workspaceId: number; agentKey: number; runId: string; name: string; format: ReportFormat; metadata: Record<string, unknown>; requestId: string; traceId: string; runInput: RunInput },
  on: Sql = sql,
): Promise<void> {
  await on.rowCount(INSERT, [r.publicId, r.workspaceId, r.agentKey, r.runId, r.name, r.format, JSON.stringify(r.metadata), r.requestId, r.traceId, JSON.stringify(r.runInput)]);
}

/** The workspace's report; undefined for a missing one and another workspace's alike. */
export async function findReport(workspaceId: number, publicId: string, on: Sql = sql): Promise<ReportRow | undefined> {
  const [row] = await on.rows<ReportRow>(FIND, [publicId, workspaceId]);
  return row;
}

/** Up to `limit` reports, newest first, after `after`; undefined when `after` is not the workspace's. */
export async function reportPage(workspaceId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<ReportRow[] | undefined> {
  const before = await pageStart(ANCHOR, workspaceId, after, on);
  return before === undefined ? undefined : on.rows<ReportRow>(PAGE, [workspaceId, before, limit]);
}

/** queued → running. */
export async function startReportRecord(publicId: string, on: Sql = sql): Promise<void> {
  await on.rowCount(START, [publicId]);
}

/** → completed with its result, or → failed with its error; once. */
export async function settleReportRecord(publicId: string, s: { status: 'completed' | 'failed'; result: unknown; error: { code: string; message: string } | null }, on: Sql = sql): Promise<void> {
  await on.rowCount(SETTLE, [publicId, s.status, s.result === undefined ? null : JSON.stringify(s.result), s.error?.code ?? null, s.error?.message ?? null]);
}
