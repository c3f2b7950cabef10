import type { ErrorCode } from './errors';
import { boolean, closed, constant, deletion, freeObject, integer, offsetPage, oneOfValues, orNull, publicId, ref, text, timestamp, type Static } from './shape';

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

export const FIRING_STATUSES = ['started', 'blocked', 'failed'] as const;
export type FiringStatus = (typeof FIRING_STATUSES)[number];

/** `failing`: SCHEDULE_PAUSE_AFTER_FAILURES firings in a row could not run; `creator_cannot_run`: whoever created it no longer may run agents. */
export const PAUSE_CODES = ['failing', 'creator_cannot_run'] as const;

/** Why a schedule paused itself; none when a caller paused it. */
export interface PausedReason {
  code: (typeof PAUSE_CODES)[number];
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

/** The public schedule object: its shape, declared once for the view and the OpenAPI document. */
export const Schedule = closed({
  id: publicId('schedule'),
  object: constant('schedule'),
  agent: text(),
  run: freeObject('The runtime input of each firing.'),
  cron: orNull(text()),
  interval_seconds: orNull(integer()),
  timezone: text(),
  overlap: oneOfValues(OVERLAP_POLICIES),
  paused: boolean(),
  paused_reason: orNull(
    closed({
      code: oneOfValues(PAUSE_CODES, '`failing`: `SCHEDULE_PAUSE_AFTER_FAILURES` firings in a row could not run; `creator_cannot_run`: the credential that created it can no longer run agents.'),
      message: text(),
      paused_at: timestamp(),
    }),
    'Why the schedule paused itself (schedule.paused); null when it runs, or a caller paused it. Resuming it (`paused: false`) clears it.',
  ),
  last_firing: orNull(
    closed({
      fired_at: timestamp(),
      status: oneOfValues(FIRING_STATUSES, '`started`: its run is `run`; `blocked`: the balance did not cover it (schedule.run_blocked); `failed`: refused for another reason (`error_code`).'),
      run: orNull(publicId('run')),
      error_code: orNull(ref<ErrorCode>('ErrorCode')),
    }),
  ),
  created_at: timestamp(),
  updated_at: timestamp(),
});

export function scheduleObject(row: ScheduleFields): Static<typeof Schedule> {
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
    // A firing records its time and its status together (db/schedules.ts).
    last_firing:
      row.last_fired_at && row.last_status
        ? {
            fired_at: row.last_fired_at.toISOString(),
            status: row.last_status,
            run: row.last_run,
            error_code: row.last_error_code as ErrorCode | null,
          }
        : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export const ScheduleList = offsetPage(ref<Static<typeof Schedule>>('Schedule'));

/** A page of `limit` schedules, from up to `limit + 1` rows. */
export function scheduleList(rows: ScheduleFields[], limit: number): Static<typeof ScheduleList> {
  return { object: 'list', data: rows.slice(0, limit).map(scheduleObject), has_more: rows.length > limit };
}

export const ScheduleDeleted = deletion('schedule', 'schedule');

export function scheduleDeleted(id: string): Static<typeof ScheduleDeleted> {
  return { id, object: 'schedule', deleted: true };
}
