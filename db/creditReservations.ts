import { sql, statement, type Sql } from './sql';

/**
 * credit_reservations: a run's maximum cost, held from its workspace's balance between acceptance and
 * settlement. The settlement (db/runs.ts) gives back what was held less the real cost, in the
 * statement that settles the run; the reconciler gives back what runs that never ran held.
 */

// One statement: the debit happens only if the balance covers it, and only for a run not reserved yet
// (a resumed request reserves nothing twice; two racing ones collide on the primary key).
const RESERVE = statement(
  `WITH debit AS (
     UPDATE workspaces SET credits = credits - $3
      WHERE id = $1 AND credits >= $3 AND NOT EXISTS (SELECT 1 FROM credit_reservations WHERE run_public_id = $2)
     RETURNING id
   )
   INSERT INTO credit_reservations (run_public_id, workspace_id, credits) SELECT $2, $1, $3 FROM debit RETURNING credits`,
);
// Touched when a resumed request finds its hold, so the reconciler does not take it for abandoned.
const HELD = statement('UPDATE credit_reservations SET created_at = now() WHERE run_public_id = $1 RETURNING credits');

/** Holds `credits` for the run; false when the balance cannot cover them. A run reserved before stays reserved. */
export async function reserveCredits(workspaceId: number, runId: string, credits: number, on: Sql = sql): Promise<boolean> {
  try {
    if ((await on.rows(RESERVE, [workspaceId, runId, credits])).length > 0) return true;
  } catch (err) {
    // A concurrent attempt of the same request reserved first.
    if ((err as { code?: string }).code !== '23505') throw err;
  }
  return (await on.rows(HELD, [runId])).length > 0;
}

const STALE = statement(
  `SELECT run_public_id AS "runId" FROM credit_reservations
    WHERE created_at < now() - make_interval(secs => $1) AND run_public_id > $2
    ORDER BY run_public_id LIMIT $3`,
);

/**
 * Reservations older than `minAgeMs`, in run id order after `after` (run ids sort by time): a run
 * that settled gave its back, so these may be abandoned.
 */
export async function staleReservations(minAgeMs: number, after: string, limit: number, on: Sql = sql): Promise<string[]> {
  return (await on.rows<{ runId: string }>(STALE, [minAgeMs / 1000, after, limit])).map((r) => r.runId);
}

// Only if still old: a hold touched since it was looked at belongs to a run that is starting.
const RELEASE = statement(
  `WITH released AS (
     DELETE FROM credit_reservations WHERE run_public_id = $1 AND created_at < now() - make_interval(secs => $2) RETURNING workspace_id, credits
   )
   UPDATE workspaces w SET credits = w.credits + released.credits FROM released WHERE w.id = released.workspace_id RETURNING released.credits`,
);

/** Gives a run's reservation back whole (the run never ran) if it is still older than `minAgeMs`; 0 when nothing was given back. */
export async function releaseReservation(runId: string, minAgeMs: number, on: Sql = sql): Promise<number> {
  const [row] = await on.rows<{ credits: number }>(RELEASE, [runId, minAgeMs / 1000]);
  return row?.credits ?? 0;
}
