import type { ActionOutcome, ActionStatus, RequiredCall } from '../domain/actions';
import type { ActionType } from '../domain/actionTypes';
import { sql, statement, type Sql } from './sql';

/** run_actions: the tool calls a run waits on and what became of them (migration 0024). */

export interface ActionRow {
  run: string;
  round: number;
  call_id: string;
  type: ActionType;
  tool: string;
  arguments: string | null;
  arguments_sha256: string | null;
  status: ActionStatus;
  reason: string | null;
  expires_at: Date;
  answered_at: Date | null;
}

const COLUMNS = 'r.public_id AS run, a.round, a.call_id, a.type, a.tool, a.arguments, a.arguments_sha256, a.status, a.reason, a.expires_at, a.answered_at';

// Safe to repeat (a retried activity): the calls already written are left as they are, and only the new ones returned.
const INSERT = statement(
  `INSERT INTO run_actions (run_id, round, call_id, type, tool, arguments, arguments_sha256, expires_at)
   SELECT r.id, $2, c.call_id, c.type, c.tool, c.arguments, c.arguments_sha256, c.expires_at
     FROM runs r, jsonb_to_recordset($3::jsonb) AS c(call_id text, type text, tool text, arguments text, arguments_sha256 text, expires_at timestamptz)
    WHERE r.public_id = $1
   ON CONFLICT (run_id, round, call_id) DO NOTHING RETURNING call_id`,
);

/** Records the calls of one tool round that wait; returns the ids of those not recorded before. */
export async function insertActions(runId: string, round: number, calls: RequiredCall[], on: Sql = sql): Promise<string[]> {
  const rows = await on.rows<{ call_id: string }>(INSERT, [runId, round, JSON.stringify(calls)]);
  return rows.map((r) => r.call_id);
}

const BY_CALL = statement(`SELECT ${COLUMNS} FROM run_actions a JOIN runs r ON r.id = a.run_id WHERE r.public_id = $1 AND a.call_id = $2 ORDER BY a.round DESC LIMIT 1`);

/** The run's latest call of this id (a model may reuse an id in a later round). */
export async function findAction(runId: string, callId: string, on: Sql = sql): Promise<ActionRow | undefined> {
  const [row] = await on.rows<ActionRow>(BY_CALL, [runId, callId]);
  return row;
}

// A pending call is resolved once; resolving it again changes nothing and returns it as it was resolved.
// Its arguments (the model's words, kept for the caller to run a client tool) go with its wait.
const RESOLVE = statement(
  `WITH resolved AS (
     UPDATE run_actions a SET status = $4, reason = $5, answered_at = now(), arguments = NULL
       FROM runs r WHERE r.id = a.run_id AND r.public_id = $1 AND a.round = $2 AND a.call_id = $3 AND a.status = 'pending'
     RETURNING ${COLUMNS}
   )
   SELECT * FROM resolved
   UNION ALL
   SELECT ${COLUMNS} FROM run_actions a JOIN runs r ON r.id = a.run_id
    WHERE r.public_id = $1 AND a.round = $2 AND a.call_id = $3 AND NOT EXISTS (SELECT 1 FROM resolved)`,
);

export async function resolveAction(runId: string, round: number, callId: string, status: Exclude<ActionStatus, 'pending'>, reason: string | null, on: Sql = sql): Promise<ActionRow> {
  const [row] = await on.rows<ActionRow>(RESOLVE, [runId, round, callId, status, reason]);
  return row;
}

export function actionOutcome(row: ActionRow): ActionOutcome {
  return {
    object: 'run.action',
    run: row.run,
    call_id: row.call_id,
    type: row.type,
    tool: row.tool,
    status: row.status,
    ...(row.reason !== null && { reason: row.reason }),
    answered_at: row.answered_at?.toISOString() ?? null,
  };
}
