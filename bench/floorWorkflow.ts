import { proxyActivities } from '@temporalio/workflow';
import type * as floorActivities from './floorActivities';

// A regular (not local) activity, as the run's model call is: one activity-task round trip.
const { noop } = proxyActivities<typeof floorActivities>({ startToCloseTimeout: '60s' });

/** The floor: the least a workflow with one activity can cost on this Temporal server; its activity holds `ms` (the burst's runs). */
export async function floorWorkflow(ms?: number): Promise<void> {
  // No argument at all when there is no hold: the c1 and c32 floors stay what they were.
  await (ms ? noop(ms) : noop());
}
