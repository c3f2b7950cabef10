import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client, type ScheduleOptionsStartWorkflowAction, type ScheduleOverlapPolicy, type ScheduleSpec } from '@temporalio/client';
import { invalidRequest } from '../domain/errors';
import type { RunInput } from '../domain/runs';
import type { OverlapPolicy, ScheduledRunInput } from '../domain/schedules';
import type { ScheduleRow } from '../db/schedules';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { unsealed, workDescribed } from './summaries';

/**
 * Everything the API does with a schedule's Temporal Schedule (of the schedule's id): its spec, its
 * policies and its action, a scheduledRun workflow on the background queue per firing (Temporal
 * names each `<schedule id>-<fire time>`).
 */
export const SCHEDULED_RUN_QUEUE: TaskQueue = QUEUES.background;

/**
 * A firing's workflow as its Schedule starts it, typed by its signature, not by the workflow: an
 * activity pauses the Schedule through this module, and the workflow's code reaches activities.
 */
type ScheduledRunWorkflow = (input: ScheduledRunInput) => Promise<void>;

const OVERLAP = { skip: 'SKIP', buffer_one: 'BUFFER_ONE', allow: 'ALLOW_ALL' } as const satisfies Record<OverlapPolicy, string>;

/** A firing missed by more than this (Temporal down, a paused schedule resumed) is skipped, not made up. */
const CATCHUP_WINDOW = 60_000;

function specOf(row: ScheduleRow): ScheduleSpec {
  return row.cron !== null ? { cronExpressions: [row.cron], timezone: row.timezone } : { intervals: [{ every: row.interval_seconds! * 1000 }], timezone: row.timezone };
}

function optionsOf(row: ScheduleRow, workspace: RunInput['workspace']) {
  const action: ScheduleOptionsStartWorkflowAction<ScheduledRunWorkflow> = {
    type: 'startWorkflow',
    workflowType: 'scheduledRun',
    taskQueue: SCHEDULED_RUN_QUEUE,
    workflowId: row.public_id,
    args: [unsealed<ScheduledRunInput>({ scheduleId: row.public_id })],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: workspace.publicId },
      { key: SEARCH_ATTRIBUTES.agentId, value: row.agent_public_id },
      { key: SEARCH_ATTRIBUTES.kind, value: 'scheduled_run' },
    ],
    ...workDescribed('scheduled run', workspace.publicId, { schedule: row.public_id, agent: row.agent_public_id }),
  };
  return { spec: specOf(row), action, policies: { overlap: OVERLAP[row.overlap] as ScheduleOverlapPolicy, catchupWindow: CATCHUP_WINDOW }, state: { paused: row.paused } };
}

/** The SDK turns Temporal's INVALID_ARGUMENT (a cron expression it cannot read) into a TypeError: the caller's 400. */
async function refusedAsInvalid(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err) {
    if (err instanceof TypeError) throw invalidRequest(`Temporal refused the schedule: ${err.message}`);
    throw err;
  }
}

/**
 * Brings the schedule's Temporal Schedule to the row: creates it, or updates the one there (spec,
 * policies, run and pause), whichever it takes (a resumed request, a Schedule lost).
 */
export async function putRunSchedule(client: Client, row: ScheduleRow, workspace: RunInput['workspace']): Promise<void> {
  // Built outside the trap below, so only Temporal's refusal becomes a 400.
  const options = optionsOf(row, workspace);
  await refusedAsInvalid(async () => {
    try {
      await client.schedule.create({ scheduleId: row.public_id, ...options });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      await client.schedule.getHandle(row.public_id).update(() => options);
    }
  });
}

/** Pauses the Temporal Schedule, with a note the Temporal UI shows (the schedule paused itself: domain/schedules.ts). */
export async function pauseRunSchedule(client: Client, scheduleId: string, note: string): Promise<void> {
  await client.schedule.getHandle(scheduleId).pause(note);
}

/** Deletes the Temporal Schedule (a firing already running goes on); gone already is fine. */
export async function deleteRunSchedule(client: Client, scheduleId: string): Promise<void> {
  await client.schedule
    .getHandle(scheduleId)
    .delete()
    .catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
}
