import { sql, statement, type Sql } from './sql';

/**
 * Background work recorded but perhaps never started: queued reports, extractions, jobs and
 * ingestions older than an age. The reconciler asks Temporal about each and fails those without a
 * workflow (the request that recorded them died before starting it, and was never retried).
 */
export type WorkKind = 'report' | 'extraction' | 'job' | 'ingestion';

const QUEUED: Record<WorkKind, ReturnType<typeof statement>> = {
  report: statement(`SELECT public_id FROM reports WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`),
  extraction: statement(`SELECT public_id FROM extractions WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`),
  job: statement(`SELECT public_id FROM jobs WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`),
  ingestion: statement(`SELECT public_id FROM knowledge_ingestions WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`),
};

const NEVER_STARTED = 'The work was recorded but never started (the request that created it failed); create it again.';

const FAIL: Record<WorkKind, ReturnType<typeof statement>> = {
  report: statement(`UPDATE reports SET status = 'failed', error_code = 'internal_error', error_message = '${NEVER_STARTED}', completed_at = now() WHERE public_id = $1 AND status = 'queued' RETURNING id`),
  extraction: statement(`UPDATE extractions SET status = 'failed', error_code = 'internal_error', error_message = '${NEVER_STARTED}', completed_at = now() WHERE public_id = $1 AND status = 'queued' RETURNING id`),
  job: statement(
    `WITH job AS (UPDATE jobs SET status = 'failed', completed_at = now() WHERE public_id = $1 AND status = 'queued' RETURNING id),
     items AS (UPDATE job_items SET status = 'cancelled' WHERE job_id IN (SELECT id FROM job) AND status = 'queued')
     SELECT id FROM job`,
  ),
  ingestion: statement(`UPDATE knowledge_ingestions SET status = 'failed', error_code = 'internal_error', error_message = '${NEVER_STARTED}', completed_at = now() WHERE public_id = $1 AND status = 'queued' RETURNING id`),
};

export async function queuedOlderThan(kind: WorkKind, minAgeMs: number, limit: number, on: Sql = sql): Promise<string[]> {
  return (await on.rows<{ public_id: string }>(QUEUED[kind], [minAgeMs / 1000, limit])).map((r) => r.public_id);
}

/** queued → failed, for work whose workflow never started. */
export async function failNeverStarted(kind: WorkKind, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rows(FAIL[kind], [publicId])).length === 1;
}
