import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities';
import { DISPATCH_PASS_MS } from './timings';

/**
 * The outbox dispatcher's passes: each a long activity that fans new events out into deliveries and
 * starts their workflows, heartbeating. A worker that dies mid-pass misses two heartbeats and the
 * pass is retried on another; both halves are idempotent, so nothing is lost or sent twice.
 */
const { dispatchOutbox } = proxyActivities<typeof activities>({
  startToCloseTimeout: DISPATCH_PASS_MS * 2,
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' },
});

/** How many passes before the history starts afresh. */
const PASSES_PER_RUN = 100;

/** Runs forever, one instance (workflow id `outbox-dispatcher`), started by every worker that polls `webhooks`. */
export async function outboxDispatcher(): Promise<void> {
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) await dispatchOutbox(DISPATCH_PASS_MS);
  await continueAsNew<typeof outboxDispatcher>();
}
