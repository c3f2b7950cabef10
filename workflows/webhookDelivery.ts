import { continueAsNew, proxyActivities, sleep, workflowInfo, type RetryPolicy } from '@temporalio/workflow';
import type * as activities from '../activities';
import { unsealed } from '../workflowClients/summaries';
import { MODEL_HEARTBEAT_TIMEOUT_MS } from '../domain/timings';
import { namedLocalActivities } from './namedActivities';
import type { DeliveryOutcome, WebhookDeliveryInput } from '../workflowClients/webhookDelivery.signature';


/**
 * Bookkeeping and the POST itself. The POST never throws for the receiver's answer (the activity
 * records it and returns the verdict); these retries are for the service's own failures (PostgreSQL).
 * An attempt waits out a database outage of up to ATTEMPT_TIMEOUT inside itself, heartbeating, so an
 * event already sent is recorded rather than sent again (activities/untilAvailable.ts).
 */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };
/** The POST's 5 s, and a managed database's longest failover (60 s) with room to spare. */
const ATTEMPT_TIMEOUT = '2m';
/** Each attempt says which it is in the Temporal UI. */
const attemptDelivery = (a: Parameters<typeof activities.attemptDelivery>[0]) =>
  proxyActivities<typeof activities>({ summary: unsealed(`webhook attempt ${a.attempt}${a.last ? ' (last)' : ''}`), startToCloseTimeout: ATTEMPT_TIMEOUT, heartbeatTimeout: MODEL_HEARTBEAT_TIMEOUT_MS, retry: BOOKKEEPING_RETRY }).attemptDelivery(a);
/** Admission is one Redis script: a local activity, so a held delivery costs its history one marker per ask. */
const { admitDeliveryAttempt } = namedLocalActivities({ startToCloseTimeout: '10s', retry: BOOKKEEPING_RETRY }, { admitDeliveryAttempt: 'partner rate admission' });

const FINAL = { delivered: 'succeeded', rejected: 'failed', skipped: 'skipped', superseded: 'superseded' } as const;

/**
 * One delivery of one event to one endpoint: pending → succeeded | failed | skipped. Attempts come
 * immediately and then at the schedule's offsets from the first, as durable timers. A receiver's
 * Retry-After moves the next attempt back; scheduled attempts it passes are not made, and none comes
 * after the schedule's last. Past the partner's delivery rate an attempt is held back, told how long
 * to wait for its turn, and is not counted.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<DeliveryOutcome> {
  const offsets = [0, ...input.retryDelaysMs];
  const last = offsets.length - 1;
  let { index, made, firstAttemptAt, notBefore } = input.resume ?? { index: 0, made: 0, firstAttemptAt: undefined, notBefore: 0 };
  for (; index <= last; index++) {
    if (firstAttemptAt !== undefined) {
      while (index < last && firstAttemptAt + offsets[index + 1] <= notBefore) index++;
      const due = Math.min(Math.max(firstAttemptAt + offsets[index], notBefore), firstAttemptAt + offsets[last]);
      await sleep(Math.max(0, due - Date.now()));
    }
    const heldMs = await holdBack(input.deliveryId);
    if (heldMs === undefined) return continueAsNew<typeof webhookDelivery>({ ...input, resume: { index, made, firstAttemptAt, notBefore } });
    const attemptedAt = Date.now();
    const outcome = await attemptDelivery({ deliveryId: input.deliveryId, generation: input.generation, attempt: input.firstAttempt + made, last: index === last, heldMs });
    made++;
    firstAttemptAt ??= attemptedAt;
    if (outcome.kind !== 'retry') return FINAL[outcome.kind];
    if (outcome.retryAfterMs !== undefined) notBefore = Date.now() + outcome.retryAfterMs;
  }
  // The last attempt recorded the delivery as failed.
  return 'failed';
}

/** Waits until the partner's rate admits an attempt; how long it waited, or undefined when the history asks to continue as new first. */
async function holdBack(deliveryId: string): Promise<number | undefined> {
  let heldMs = 0;
  for (;;) {
    const waitMs = await admitDeliveryAttempt(deliveryId);
    if (waitMs === 0) return heldMs;
    if (workflowInfo().continueAsNewSuggested) return undefined;
    await sleep(waitMs);
    heldMs += waitMs;
  }
}
