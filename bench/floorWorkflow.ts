import { proxyActivities } from '@temporalio/workflow';
import type * as floorActivities from './floorActivities';

// A regular (not local) activity, as the run's model call is: one activity-task round trip.
const { noop } = proxyActivities<typeof floorActivities>({ startToCloseTimeout: '60s' });

/** The floor: the least a workflow with one activity can cost on this Temporal server. */
export async function floorWorkflow(): Promise<void> {
  await noop();
}
