import type { Creator } from '../domain/creators';
import type { ItemStatus, JobCounts, JobFields, JobStatus, JobType } from '../domain/jobs';
import { sql, statement, transaction, type Sql } from './sql';
import { creatorOf } from './creators';

export interface JobRow extends JobFields {
  id: number;
  workspace_id: number;
  cancel_requested: boolean;
  request_id: string;
  trace_id: string;
}

export interface JobItemRow {
  seq: number;
  item: unknown;
  status: ItemStatus;
  resource_id: string | null;
  error_code: string | null;
  error_message: string | null;
}

const COLUMNS = 'id, public_id, workspace_id, type, params, status, cancel_requested, items_total, request_id, trace_id, created_at, started_at, completed_at';

const INSERT = statement(
  `INSERT INTO jobs (public_id, workspace_id, type, params, items_total, request_id, trace_id, created_by_key, created_by_member, created_by_grant) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
);
const INSERT_ITEMS = statement('INSERT INTO job_items (job_id, seq, item) SELECT $1, seq - 1, item FROM unnest($2::jsonb[]) WITH ORDINALITY AS t(item, seq)');
const FIND = statement(`SELECT ${COLUMNS} FROM jobs WHERE public_id = $1 AND workspace_id = $2`);
const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM jobs WHERE public_id = $1`);
const PAGE = statement(
  `SELECT ${COLUMNS} FROM jobs WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR type = $3)
    ORDER BY id DESC OFFSET $4 LIMIT $5`,
);
const COUNTS = statement('SELECT status, count(*)::int AS n FROM job_items WHERE job_id = $1 GROUP BY status');
const ITEMS = statement('SELECT seq, item, status, resource_id, error_code, error_message FROM job_items WHERE job_id = $1 ORDER BY seq OFFSET $2 LIMIT $3');
const NEXT_ITEMS = statement(`SELECT seq, item, status, resource_id, error_code, error_message FROM job_items WHERE job_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`);
const START = statement(`UPDATE jobs SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'queued'`);
const ITEM_RUNNING = statement(`UPDATE job_items SET status = 'running', resource_id = $3 WHERE job_id = $1 AND seq = $2 AND status IN ('queued', 'running')`);
const ITEM_DONE = statement(
  `UPDATE job_items SET status = $3, error_code = $4, error_message = $5 WHERE job_id = $1 AND seq = $2 AND status IN ('queued', 'running')`,
);
const ITEM_WITHDRAWN = statement(`UPDATE job_items SET status = 'cancelled', resource_id = NULL WHERE job_id = $1 AND seq = $2 AND status IN ('queued', 'running')`);
const CANCEL = statement(`UPDATE jobs SET cancel_requested = true WHERE id = $1 AND status IN ('queued', 'running')`);
const CANCEL_QUEUED = statement(`UPDATE job_items SET status = 'cancelled' WHERE job_id = $1 AND status = 'queued'`);
const FINISH = statement(`UPDATE jobs SET status = $2, completed_at = now() WHERE id = $1 AND status IN ('queued', 'running')`);

/** The job and its items, in one transaction: an accepted job has all of them. */
export function insertJob(j: {
  publicId: string;
  workspaceId: number;
  type: JobType;
  params: Record<string, unknown>;
  items: unknown[];
  requestId: string;
  traceId: string;
  /** The creating key or member (the API always names one). */
  createdBy?: { keyKey: number | null; memberKey: number | null; grantId?: string };
}): Promise<void> {
  return transaction(async (tx) => {
    const [job] = await tx.rows<{ id: number }>(INSERT, [j.publicId, j.workspaceId, j.type, JSON.stringify(j.params), j.items.length, j.requestId, j.traceId, j.createdBy?.keyKey ?? null, j.createdBy?.memberKey ?? null, j.createdBy?.grantId ?? null]);
    await tx.rowCount(INSERT_ITEMS, [job.id, j.items.map((item) => JSON.stringify(item))]);
  });
}

/** The workspace's job; undefined for a missing one and another workspace's alike. */
export async function findJob(workspaceId: number, publicId: string, on: Sql = sql): Promise<JobRow | undefined> {
  const [row] = await on.rows<JobRow>(FIND, [publicId, workspaceId]);
  return row;
}

/** For the job's workflow and the admin CLI. */
export async function jobById(publicId: string, on: Sql = sql): Promise<JobRow | undefined> {
  const [row] = await on.rows<JobRow>(BY_PUBLIC_ID, [publicId]);
  return row;
}

/** Newest first, by row offset (the spec's one offset-paged list: a page taken while jobs are created can skip or repeat one). */
export async function jobPage(workspaceId: number, q: { status?: JobStatus; type?: JobType; offset: number; limit: number }, on: Sql = sql): Promise<JobRow[]> {
  return on.rows<JobRow>(PAGE, [workspaceId, q.status ?? null, q.type ?? null, q.offset, q.limit]);
}

export async function jobCounts(jobKey: number, on: Sql = sql): Promise<JobCounts> {
  const counts: JobCounts = { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 };
  for (const row of await on.rows<{ status: ItemStatus; n: number }>(COUNTS, [jobKey])) counts[row.status] = row.n;
  return counts;
}

export async function jobItems(jobKey: number, offset: number, limit: number, on: Sql = sql): Promise<JobItemRow[]> {
  return on.rows<JobItemRow>(ITEMS, [jobKey, offset, limit]);
}

/** The items from `fromSeq` on, in order. */
export async function itemsFrom(jobKey: number, fromSeq: number, limit: number, on: Sql = sql): Promise<JobItemRow[]> {
  return on.rows<JobItemRow>(NEXT_ITEMS, [jobKey, fromSeq, limit]);
}

export async function startJobRecord(jobKey: number, on: Sql = sql): Promise<void> {
  await on.rowCount(START, [jobKey]);
}

export async function itemRunning(jobKey: number, seq: number, resourceId: string, on: Sql = sql): Promise<void> {
  await on.rowCount(ITEM_RUNNING, [jobKey, seq, resourceId]);
}

export async function itemDone(jobKey: number, seq: number, status: 'completed' | 'failed' | 'cancelled', error: { code: string; message: string } | undefined, on: Sql = sql): Promise<void> {
  await on.rowCount(ITEM_DONE, [jobKey, seq, status, error?.code ?? null, error?.message ?? null]);
}

/** An item whose resource was created but never started (the job was cancelled in between): it never ran. */
export async function itemWithdrawn(jobKey: number, seq: number, on: Sql = sql): Promise<void> {
  await on.rowCount(ITEM_WITHDRAWN, [jobKey, seq]);
}

/** Asks a job to stop: false when it had finished already. */
export async function requestCancel(jobKey: number, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(CANCEL, [jobKey])) === 1;
}

/** A stopping job's items that never started. */
export async function cancelQueuedItems(jobKey: number, on: Sql = sql): Promise<void> {
  await on.rowCount(CANCEL_QUEUED, [jobKey]);
}

export async function finishJobRecord(jobKey: number, status: JobStatus, on: Sql = sql): Promise<void> {
  await on.rowCount(FINISH, [jobKey, status]);
}

export function jobCreator(jobKey: number, on: Sql = sql): Promise<Creator | undefined> {
  return creatorOf('jobs', jobKey, on);
}
