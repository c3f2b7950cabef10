import { executeChild, workflowInfo } from '@temporalio/workflow';
import type { ScheduledRunInput } from '../domain/schedules';
import { agentRun } from './agentRun';
import { runStartOptions } from '../workflowClients/agentRun.options';
import { namedActivities } from './namedActivities';


/** Planning is bookkeeping in PostgreSQL, idempotent (the run's id is derived): retried until it succeeds, within the firing's minute. */
const { fireSchedule } = namedActivities(
  { startToCloseTimeout: '30s', scheduleToCloseTimeout: '1m', retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' } },
  { fireSchedule: 'plan the firing: scope, credits, run' },
);

/**
 * One firing of a schedule, started by its Temporal Schedule: planned (the schedule read, its
 * creator's scope checked, the run's credits held; or the firing recorded blocked or failed, and the
 * schedule goes on), then its run as a child workflow. The run's id is derived from this firing's
 * workflow id (the schedule's id and the fire time), so a retried firing starts one run at most.
 * The Schedule's overlap policy sees the firing running for as long as its run does.
 */
export async function scheduledRun(input: ScheduledRunInput): Promise<void> {
  const { workflowId, startTime } = workflowInfo();
  const firing = await fireSchedule({ ...input, firingId: workflowId, firedAt: startTime.getTime() });
  if (firing.run) await executeChild(agentRun, runStartOptions(firing.run));
}
