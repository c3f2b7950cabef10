import { sql, statement, type Sql } from './sql';

/**
 * The run_cancel_requests table. Recording takes the run's lock first (when the run is recorded), so
 * it orders with a settlement holding that lock, whose settling statement looks for the cancel
 * (db/runs.ts): a cancel recorded before the settlement looks is seen, and one recorded after it
 * changes nothing.
 */

const LOCK_RUN = statement('SELECT 1 FROM runs WHERE public_id = $1 FOR UPDATE');
const INSERT = statement('INSERT INTO run_cancel_requests (run_public_id) VALUES ($1) ON CONFLICT DO NOTHING');

/** Records that the run was asked to cancel (inside the caller's transaction). */
export async function recordCancelRequest(runId: string, on: Sql): Promise<void> {
  await on.rows(LOCK_RUN, [runId]);
  await on.rows(INSERT, [runId]);
}

const PURGE = statement(`DELETE FROM run_cancel_requests WHERE requested_at < now() - make_interval(secs => $1::double precision / 1000)`);

/** Deletes the cancels recorded more than `ageMs` ago; returns how many. */
export async function purgeCancelRequests(ageMs: number, on: Sql = sql): Promise<number> {
  return on.rowCount(PURGE, [ageMs]);
}
