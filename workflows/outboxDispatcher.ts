import { DISPATCH_EVERY_MS, DISPATCH_HEARTBEAT_INTERVAL_MS, DISPATCH_PASS_MS } from '../domain/timings';
import { namedActivities } from './namedActivities';

/**
 * The outbox dispatcher's passes: each a long activity that fans new events out into deliveries and
 * starts their workflows, heartbeating. A worker that dies mid-pass misses two heartbeats and the
 * pass is retried on another; both halves are idempotent, so nothing is lost or sent twice.
 */
const { dispatchOutbox } = namedActivities(
  { startToCloseTimeout: DISPATCH_PASS_MS * 3, heartbeatTimeout: 2 * DISPATCH_HEARTBEAT_INTERVAL_MS, retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' } },
  { dispatchOutbox: 'dispatcher pass: outbox events to deliveries' },
);

/**
 * One run of the dispatcher: passes for the Schedule's interval. The Schedule (`outbox-dispatcher`,
 * BUFFER_ONE) starts the next run as this one ends, so passes follow one another without a gap, and
 * a run that was terminated or failed is replaced at the next tick.
 */
export async function outboxDispatcher(): Promise<void> {
  for (let pass = 0; pass < DISPATCH_EVERY_MS / DISPATCH_PASS_MS; pass++) await dispatchOutbox(DISPATCH_PASS_MS);
}
