import type { Creator } from '../domain/creators';
import type { RunInput } from '../domain/runs';
import type { FiringStatus, PausedReason, OverlapPolicy, ScheduleFields } from '../domain/schedules';
import { sql, statement, type Sql } from './sql';
import { creatorOf } from './creators';

/** schedules: what each schedule runs and when; the Temporal Schedule of the same id fires it (migration 0023). */

type RunWorkspace = RunInput['workspace'];

export interface ScheduleRow extends ScheduleFields {
  id: number;
  workspace_id: number;
}

/** What a caller sets: on creation all of it, on update any of it. */
export interface ScheduleSpec {
  agentPublicId: string;
  run: Record<string, unknown>;
  cron: string | null;
  intervalSeconds: number | null;
  timezone: string;
  overlap: OverlapPolicy;
  paused: boolean;
}

const COLUMNS = `id, public_id, workspace_id, agent_public_id, run, cron, interval_seconds, timezone, overlap, paused, paused_reason,
  last_fired_at, last_run, last_status, last_error_code, created_at, updated_at`;

const INSERT = statement(
  `INSERT INTO schedules (public_id, workspace_id, agent_public_id, run, cron, interval_seconds, timezone, overlap, paused, created_by_key, created_by_member, request_id, created_by_grant)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING ${COLUMNS}`,
);

export async function insertSchedule(
  s: ScheduleSpec & { publicId: string; workspaceId: number; createdBy: { keyKey: number | null; memberKey: number | null; grantId?: string }; requestId: string },
  on: Sql = sql,
): Promise<ScheduleRow> {
  const [row] = await on.rows<ScheduleRow>(INSERT, [
    s.publicId, s.workspaceId, s.agentPublicId, JSON.stringify(s.run), s.cron, s.intervalSeconds, s.timezone, s.overlap, s.paused,
    s.createdBy.keyKey ?? null, s.createdBy.memberKey ?? null, s.requestId, s.createdBy.grantId ?? null,
  ]);
  return row;
}

// A lock of its own, not the workspace's row: settlements and holds of the workspace never wait on a creation.
const LOCK_WORKSPACE = statement("SELECT pg_advisory_xact_lock(hashtextextended('schedules:' || $1::text, 0))");
const COUNT = statement('SELECT count(*)::int AS n FROM schedules WHERE workspace_id = $1 AND deleted_at IS NULL');

/** How many schedules the workspace has, counted under a lock of the workspace's schedules (inside the caller's transaction) so concurrent creations count one after another. */
export async function lockedScheduleCount(workspaceId: number, tx: Sql): Promise<number> {
  await tx.rows(LOCK_WORKSPACE, [workspaceId]);
  return (await tx.rows<{ n: number }>(COUNT, [workspaceId]))[0].n;
}

const FIND = statement(`SELECT ${COLUMNS} FROM schedules WHERE public_id = $1 AND workspace_id = $2 AND deleted_at IS NULL`);

/** The workspace's schedule (another workspace's, or a deleted one, is not found). */
export async function findSchedule(workspaceId: number, publicId: string, on: Sql = sql): Promise<ScheduleRow | undefined> {
  return (await on.rows<ScheduleRow>(FIND, [publicId, workspaceId]))[0];
}

const LOCK = statement(`SELECT ${COLUMNS} FROM schedules WHERE public_id = $1 AND workspace_id = $2 AND deleted_at IS NULL FOR UPDATE`);

/** The workspace's schedule, locked for a change (inside the caller's transaction): concurrent changes apply one after another. */
export async function lockSchedule(workspaceId: number, publicId: string, tx: Sql): Promise<ScheduleRow | undefined> {
  return (await tx.rows<ScheduleRow>(LOCK, [publicId, workspaceId]))[0];
}

const FIRING = statement(
  `SELECT ${COLUMNS.replace(/(\w+)/g, 's.$1')}, w.public_id AS workspace_public_id, w.tenant_ref, p.public_id AS partner_public_id
     FROM schedules s JOIN workspaces w ON w.id = s.workspace_id LEFT JOIN partners p ON p.id = w.partner_id
    WHERE s.public_id = $1 AND s.deleted_at IS NULL`,
);

/** A schedule as its firing reads it, with its workspace as it stands; undefined once deleted. */
export async function scheduleToFire(publicId: string, on: Sql = sql): Promise<(ScheduleRow & { workspace: RunWorkspace }) | undefined> {
  const [row] = await on.rows<ScheduleRow & { workspace_public_id: string; tenant_ref: string | null; partner_public_id: string | null }>(FIRING, [publicId]);
  if (!row) return undefined;
  const { workspace_public_id, tenant_ref, partner_public_id, ...schedule } = row;
  return { ...schedule, workspace: { id: row.workspace_id, publicId: workspace_public_id, tenantRef: tenant_ref, partnerPublicId: partner_public_id } };
}

const PAGE = statement(`SELECT ${COLUMNS} FROM schedules WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY id DESC OFFSET $2 LIMIT $3`);

/** The workspace's schedules, newest first. */
export async function schedulePage(workspaceId: number, offset: number, limit: number, on: Sql = sql): Promise<ScheduleRow[]> {
  return on.rows<ScheduleRow>(PAGE, [workspaceId, offset, limit]);
}

// Resumed (paused false), a schedule that paused itself forgets why, and counts its failures afresh.
const UPDATE = statement(
  `UPDATE schedules SET run = $3, cron = $4, interval_seconds = $5, timezone = $6, overlap = $7, paused = $8, updated_at = now(),
                        paused_reason = CASE WHEN $8 THEN paused_reason END, failures_in_a_row = CASE WHEN $8 THEN failures_in_a_row ELSE 0 END
    WHERE public_id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
);

export async function updateSchedule(workspaceId: number, publicId: string, s: Omit<ScheduleSpec, 'agentPublicId'>, on: Sql = sql): Promise<ScheduleRow | undefined> {
  return (await on.rows<ScheduleRow>(UPDATE, [publicId, workspaceId, JSON.stringify(s.run), s.cron, s.intervalSeconds, s.timezone, s.overlap, s.paused]))[0];
}

const DELETE = statement('UPDATE schedules SET deleted_at = now() WHERE public_id = $1 AND workspace_id = $2 AND deleted_at IS NULL');

/** Marks the schedule deleted; false when there was none to delete. */
export async function deleteSchedule(workspaceId: number, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(DELETE, [publicId, workspaceId])) > 0;
}

// The creator as it stands now (domain/creators.ts).
export function scheduleCreator(scheduleKey: number, on: Sql = sql): Promise<Creator | undefined> {
  return creatorOf('schedules', scheduleKey, on);
}

const FIRED = statement(
  `UPDATE schedules SET last_fired_at = $2, last_run = $3, last_status = $4, last_error_code = $5,
                        failures_in_a_row = CASE WHEN $4 = 'started' THEN 0 ELSE failures_in_a_row + 1 END
    WHERE id = $1 RETURNING failures_in_a_row AS "failuresInARow"`,
);

/** Records the schedule's latest firing (inside the firing's transaction, with its events); how many firings in a row have not run, this one included. */
export async function recordFiring(scheduleKey: number, f: { at: Date; run: string | null; status: FiringStatus; errorCode: string | null }, on: Sql = sql): Promise<number> {
  const [row] = await on.rows<{ failuresInARow: number }>(FIRED, [scheduleKey, f.at, f.run, f.status, f.errorCode]);
  return row?.failuresInARow ?? 0;
}

// Whoever resumes a schedule runs it from then on: its firings check their creator (domain/creators.ts).
const TAKE_OVER = statement('UPDATE schedules SET created_by_key = $2, created_by_member = $3, created_by_grant = $4 WHERE public_id = $1');

/** The schedule's firings run on behalf of `by` from now on. */
export async function takeOverSchedule(publicId: string, by: { keyKey: number | null; memberKey: number | null; grantId?: string }, on: Sql = sql): Promise<void> {
  await on.rows(TAKE_OVER, [publicId, by.keyKey, by.memberKey, by.grantId ?? null]);
}

const PAUSE_ITSELF = statement(`UPDATE schedules SET paused = true, paused_reason = $2, updated_at = now() WHERE id = $1 AND NOT paused AND deleted_at IS NULL RETURNING ${COLUMNS}`);

/** The schedule pauses itself, saying why; undefined when it was paused already (so it says so once). */
export async function pauseScheduleItself(scheduleKey: number, reason: PausedReason, on: Sql = sql): Promise<ScheduleRow | undefined> {
  return (await on.rows<ScheduleRow>(PAUSE_ITSELF, [scheduleKey, JSON.stringify(reason)]))[0];
}
