import { sql, statement, type Sql } from './sql';

/**
 * credit_reservations: a run's maximum cost, held from its workspace's balance between acceptance and
 * settlement. The settlement (db/runs.ts) gives back what was held less the real cost, in the
 * statement that settles the run; the reconciler gives back what runs that never ran held.
 * A message's hold is also its turn in the conversation (migration 0022): open while the hold is.
 */

// One statement: the debit happens only if the balance covers it, and only for a run not reserved yet
// (a resumed request reserves nothing twice; two racing ones collide on the primary key).
const RESERVE = statement(
  `WITH debit AS (
     UPDATE workspaces SET credits = credits - $3
      WHERE id = $1 AND credits >= $3 AND NOT EXISTS (SELECT 1 FROM credit_reservations WHERE run_public_id = $2)
     RETURNING id
   )
   INSERT INTO credit_reservations (run_public_id, workspace_id, credits, conversation_id) SELECT $2, $1, $3, $4 FROM debit RETURNING turn`,
);
// Touched when a resumed request finds its hold, so the reconciler does not take it for abandoned.
const HELD = statement('UPDATE credit_reservations SET created_at = now() WHERE run_public_id = $1 RETURNING turn, conversation_id AS "conversationId"');

/** A hold: `reserved` when this call took it, false when it was taken before (a resumed request: then the conversation it was taken in). */
interface Hold {
  turn: number;
  reserved: boolean;
  conversationId?: number | null;
}

async function hold(workspaceId: number, runId: string, credits: number, conversationId: number | null, on: Sql): Promise<Hold | undefined> {
  try {
    const [taken] = await on.rows<{ turn: string }>(RESERVE, [workspaceId, runId, credits, conversationId]);
    if (taken) return { turn: Number(taken.turn), reserved: true };
  } catch (err) {
    // A concurrent attempt of the same request reserved first.
    if ((err as { code?: string }).code !== '23505') throw err;
  }
  const [found] = await on.rows<{ turn: string; conversationId: string | null }>(HELD, [runId]);
  return found && { turn: Number(found.turn), reserved: false, conversationId: found.conversationId === null ? null : Number(found.conversationId) };
}

/** Holds `credits` for the run; false when the balance cannot cover them. A run reserved before stays reserved. */
export async function reserveCredits(workspaceId: number, runId: string, credits: number, on: Sql = sql): Promise<boolean> {
  return (await hold(workspaceId, runId, credits, null, on)) !== undefined;
}

// The conversation's row is the turns' lock: holds are numbered in the order they take it, and the
// statements after it see every hold committed before. NO KEY UPDATE, so the foreign-key checks of
// messages inserted meanwhile (a settlement, which has locked its workspace's row first) never wait
// on it: waiting there, with this hold waiting on the workspace's row, would be a deadlock.
const LOCK_CONVERSATION = statement('SELECT id FROM conversations WHERE id = $1 FOR NO KEY UPDATE');
const TURNS_BEFORE = statement('SELECT run_public_id AS "runId" FROM credit_reservations WHERE conversation_id = $1 AND turn < $2 ORDER BY turn');

/** A message's hold: its turn, and the open turns of its conversation before it (oldest first). */
export interface Turn extends Hold {
  ahead: string[];
}

/**
 * Holds `credits` for a message's run as its conversation's next turn; undefined when the balance
 * cannot cover them. Inside the caller's transaction, so the caller can still refuse the turn.
 */
export async function reserveTurn(workspaceId: number, runId: string, credits: number, conversationId: number, tx: Sql): Promise<Turn | undefined> {
  await tx.rows(LOCK_CONVERSATION, [conversationId]);
  const held = await hold(workspaceId, runId, credits, conversationId, tx);
  if (!held) return undefined;
  return { ...held, ahead: await openTurnsBefore(conversationId, held.turn, tx) };
}

/** The open turns of the conversation before `turn`, oldest first. */
export async function openTurnsBefore(conversationId: number, turn: number, on: Sql = sql): Promise<string[]> {
  return (await on.rows<{ runId: string }>(TURNS_BEFORE, [conversationId, turn])).map((r) => r.runId);
}

const FIRST_TURN = statement('SELECT run_public_id AS "runId" FROM credit_reservations WHERE conversation_id = $1 ORDER BY turn LIMIT 1');

/** The conversation's oldest open turn: the one that may run now. */
export async function firstOpenTurn(conversationId: number, on: Sql = sql): Promise<string | undefined> {
  return (await on.rows<{ runId: string }>(FIRST_TURN, [conversationId]))[0]?.runId;
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
     DELETE FROM credit_reservations WHERE run_public_id = $1 AND created_at < now() - make_interval(secs => $2) RETURNING workspace_id, credits, conversation_id
   )
   UPDATE workspaces w SET credits = w.credits + released.credits FROM released WHERE w.id = released.workspace_id
   RETURNING released.credits, released.conversation_id AS "conversationId"`,
);

/**
 * Gives a run's reservation back whole (the run never ran) if it is still older than `minAgeMs`:
 * what was given back (0 when nothing was), and the conversation whose turn it ended.
 */
export async function releaseReservation(runId: string, minAgeMs: number, on: Sql = sql): Promise<{ credits: number; conversationId: number | null }> {
  const [row] = await on.rows<{ credits: string; conversationId: string | null }>(RELEASE, [runId, minAgeMs / 1000]);
  return { credits: Number(row?.credits ?? 0), conversationId: row?.conversationId == null ? null : Number(row.conversationId) };
}

// Raised only as far as the balance covers it, in one statement: the debit and the hold together.
const RAISE = statement(
  `WITH debit AS (
     UPDATE workspaces w SET credits = w.credits - $2 FROM credit_reservations c
      WHERE c.run_public_id = $1 AND w.id = c.workspace_id AND w.credits >= $2 RETURNING w.id
   )
   UPDATE credit_reservations SET credits = credits + $2 WHERE run_public_id = $1 AND EXISTS (SELECT 1 FROM debit) RETURNING credits`,
);

/** Raises a running run's hold by `extra` credits from its workspace's balance; false when the balance cannot cover them (nothing changes). */
export async function raiseHold(runId: string, extra: number, on: Sql = sql): Promise<boolean> {
  return (await on.rows(RAISE, [runId, extra])).length > 0;
}

// What the hold keeps is never raised here: only lowered, and the difference given back to the balance.
const LOWER = statement(
  `WITH cut AS (
     UPDATE credit_reservations c SET credits = $2 FROM (SELECT credits AS before FROM credit_reservations WHERE run_public_id = $1) o
      WHERE c.run_public_id = $1 AND c.credits > $2 RETURNING c.workspace_id, o.before - $2 AS back
   )
   UPDATE workspaces w SET credits = w.credits + cut.back FROM cut WHERE w.id = cut.workspace_id`,
);

/**
 * Lowers a running run's hold to `keep` credits (what it has consumed and what its remaining calls
 * may cost) while it waits for people, giving the rest back (nothing when it held no more).
 */
export async function lowerHold(runId: string, keep: number, on: Sql = sql): Promise<void> {
  await on.rows(LOWER, [runId, keep]);
}
