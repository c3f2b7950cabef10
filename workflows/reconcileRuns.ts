import { patched } from '@temporalio/workflow';
import type { Reconciled } from '../workflowClients/reconcileRuns.client';
import type * as activities from '../activities';
import { RECONCILE_MIN_AGE_MS } from '../domain/timings';
import { namedActivities } from './namedActivities';

/** One batch looks at up to 100 runs, each a Temporal describe and perhaps a settlement: a minute is ample; retried a few times. */
const { settleAbandonedRuns, failUnstartedWork, purgeCancelRecords } = namedActivities(
  { startToCloseTimeout: '1m', retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 } },
  { settleAbandonedRuns: 'settle runs left open', failUnstartedWork: 'fail work never started', purgeCancelRecords: 'delete old cancel records' },
);

/**
 * The reconciler, started by the `reconcile-runs` Schedule: settles every run that its workflow left
 * open (terminated by an operator, timed out, failed after a bad deploy), so no row stays running
 * without a workflow, gives back the credit reservations of runs that never ran, and fails background
 * work recorded but never started. Anything younger than `minAgeMs` is left alone. Then it deletes
 * the recorded cancels no run can read any more.
 */
export async function reconcileRuns(minAgeMs: number = RECONCILE_MIN_AGE_MS): Promise<Reconciled> {
  const settled: string[] = [];
  const released: string[] = [];
  let cursor: Awaited<ReturnType<typeof activities.settleAbandonedRuns>>['next'];
  do {
    const page = await settleAbandonedRuns(minAgeMs, cursor);
    settled.push(...page.settled);
    released.push(...page.released);
    cursor = page.next;
  } while (cursor);
  // Passes begun before this step existed end without it.
  const failed = patched('unstarted-work') ? await failUnstartedWork(minAgeMs) : [];
  const purgedCancels = patched('purge-cancel-requests') ? await purgeCancelRecords() : 0;
  return { settled, released, failed, purgedCancels };
}
