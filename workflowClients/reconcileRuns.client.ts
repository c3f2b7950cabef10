import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { ensureSchedule } from './ensureSchedule';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { serviceDescribed } from './summaries';
import { RECONCILE_EVERY_MS } from '../domain/timings';

/** The Schedule that runs the reconciler, visible (and pausable) in the Temporal UI under this id. */
export const RECONCILE_SCHEDULE_ID = 'reconcile-runs';
const QUEUE: TaskQueue = QUEUES.background;

/** What one pass settled, released and failed, by run id, and how many recorded cancels it deleted. */
export interface Reconciled {
  settled: string[];
  released: string[];
  failed: string[];
  purgedCancels: number;
}

/** The workflow as its starters know it: by signature (workflows/reconcileRuns.ts), so no workflow code is reached from here. */
type ReconcileWorkflow = (minAgeMs?: number) => Promise<Reconciled>;

/**
 * Creates the reconciler's Schedule unless it exists (or remakes it under a new payload key): every worker that polls `background` calls
 * this at start, so a new deployment has it without a separate step. One run at a time (SKIP).
 */
export async function ensureReconcileSchedule(client: Client): Promise<void> {
  await ensureSchedule(client, {
    scheduleId: RECONCILE_SCHEDULE_ID,
    spec: { intervals: [{ every: RECONCILE_EVERY_MS }] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    action: {
      type: 'startWorkflow',
      workflowType: 'reconcileRuns',
      workflowId: RECONCILE_SCHEDULE_ID,
      taskQueue: QUEUE,
      args: [],
      workflowExecutionTimeout: RECONCILE_EVERY_MS * 10,
      typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'reconcile' }],
      ...serviceDescribed(['reconciler', 'settles runs whose workflow ended without settling']),
    },
  });
}

/** Runs the reconciler once now and waits for what it settled (operators, and tests with a younger age). */
export async function reconcileNow(client: Client, minAgeMs?: number): Promise<Reconciled> {
  return client.workflow.execute<ReconcileWorkflow>('reconcileRuns', {
    taskQueue: QUEUE,
    workflowId: `${RECONCILE_SCHEDULE_ID}-now-${Date.now()}`,
    args: minAgeMs === undefined ? [] : [minAgeMs],
    workflowExecutionTimeout: RECONCILE_EVERY_MS * 10,
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'reconcile' }],
  });
}
