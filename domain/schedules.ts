
/** Runs on a schedule (docs/api.md, "Schedules"): each firing is an ordinary agent run. */

/**
 * What each firing of a schedule's Temporal Schedule starts its scheduledRun workflow with: the
 * schedule's id alone, unsealed. A Schedule keeps its arguments for as long as it lives, and ones
 * sealed with a payload key later dropped from the ring could no longer be opened; an id is no
 * secret (it names the Schedule too), and the firing reads everything else from the schedule's row.
 * (Firings of Schedules made before this also carry their workspace, which nothing reads.)
 */
export interface ScheduledRunInput {
  scheduleId: string;
}

/** What a firing does when the schedule's last firing is still running (Temporal's overlap policies). */
export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'allow'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/**
 * An interval shorter than this is refused: a schedule is for work that recurs, not a busy loop
 * (each firing is a run, with its credit hold, its workflows and its webhook events).
 */
export const MIN_INTERVAL_SECONDS = 5;

export type FiringStatus = 'started' | 'blocked' | 'failed';

/** Why a schedule paused itself; none when a caller paused it. */
export interface PausedReason {
  /** `failing`: SCHEDULE_PAUSE_AFTER_FAILURES firings in a row could not run; `creator_cannot_run`: whoever created it no longer may run agents. */
  code: 'failing' | 'creator_cannot_run';
  message: string;
  paused_at: string;
}

export interface ScheduleFields {
  public_id: string;
  agent_public_id: string;
  run: Record<string, unknown>;
  cron: string | null;
  interval_seconds: number | null;
  timezone: string;
  overlap: OverlapPolicy;
  paused: boolean;
  last_fired_at: Date | null;
  last_run: string | null;
  last_status: FiringStatus | null;
  last_error_code: string | null;
  paused_reason: PausedReason | null;
  created_at: Date;
  updated_at: Date;
}

/** The public schedule object. */
export function scheduleObject(row: ScheduleFields): Record<string, unknown> {
  return {
    id: row.public_id,
    object: 'schedule',
    agent: row.agent_public_id,
    run: row.run,
    cron: row.cron,
    interval_seconds: row.interval_seconds,
    timezone: row.timezone,
    overlap: row.overlap,
    paused: row.paused,
    paused_reason: row.paused_reason,
    last_firing: row.last_fired_at && {
      fired_at: row.last_fired_at.toISOString(),
      status: row.last_status,
      run: row.last_run,
      error_code: row.last_error_code,
    },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
