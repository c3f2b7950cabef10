import { continueAsNew, proxyActivities, proxyLocalActivities, sleep, workflowInfo, type RetryPolicy } from '@temporalio/workflow';
import type * as activities from '../activities';
import type { DeliveryStatus } from '../domain/webhooks';
import { MAX_HOLD_MS } from './timings';

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** The attempt number of the schedule's first attempt: 1, or after the attempts a resend follows. */
  firstAttempt: number;
  /** When attempts after the first come, in ms after the first (configuration: the spec's 60 s, 5 min, 30 min). */
  retryDelaysMs: number[];
  /** Where a delivery that continued as new was: the schedule's next index and when its first attempt was. */
  resume?: { index: number; firstAttemptAt: number };
}

/**
 * Bookkeeping and the POST itself. The POST never throws for the receiver's answer (the activity
 * records it and returns the verdict); these retries are for the service's own failures (PostgreSQL).
 */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };
const { attemptDelivery } = proxyActivities<typeof activities>({ startToCloseTimeout: '30s', retry: BOOKKEEPING_RETRY });
/** Admission is one Redis script: a local activity, so a held delivery costs its history one marker per ask. */
const { admitDeliveryAttempt } = proxyLocalActivities<typeof activities>({ startToCloseTimeout: '10s', retry: BOOKKEEPING_RETRY });

/**
 * One delivery of one event to one endpoint: pending → succeeded | failed | skipped. Attempts come
 * immediately and then at the schedule's offsets from the first, as durable timers. A receiver's
 * Retry-After pushes the next attempt back, never past the schedule's last. Past the partner's
 * delivery rate an attempt is held back, asking again with growing delay, and is not counted.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<DeliveryStatus> {
  const offsets = [0, ...input.retryDelaysMs];
  let firstAttemptAt = input.resume?.firstAttemptAt;
  let notBefore = 0;
  for (let index = input.resume?.index ?? 0; index < offsets.length; index++) {
    if (firstAttemptAt !== undefined) {
      const due = Math.min(Math.max(firstAttemptAt + offsets[index], notBefore), firstAttemptAt + offsets[offsets.length - 1]);
      await sleep(Math.max(0, due - Date.now()));
    }
    const heldMs = await holdBack(input.deliveryId);
    if (heldMs === undefined) return continueAsNew<typeof webhookDelivery>({ ...input, resume: { index, firstAttemptAt: firstAttemptAt ?? Date.now() } });
    const outcome = await attemptDelivery({ deliveryId: input.deliveryId, attempt: input.firstAttempt + index, last: index === offsets.length - 1, heldMs });
    firstAttemptAt ??= Date.now();
    if (outcome.kind !== 'retry') return FINAL[outcome.kind];
    notBefore = Date.now() + (outcome.retryAfterMs ?? 0);
  }
  // The last attempt recorded the delivery as failed.
  return 'failed';
}

const FINAL = { delivered: 'succeeded', rejected: 'failed', skipped: 'skipped' } as const;

/** Waits until the partner's rate admits an attempt; how long it waited, or undefined when the history asks to continue as new first. */
async function holdBack(deliveryId: string): Promise<number | undefined> {
  let heldMs = 0;
  for (let holds = 0; ; holds++) {
    const waitMs = await admitDeliveryAttempt(deliveryId);
    if (waitMs === 0) return heldMs;
    if (workflowInfo().continueAsNewSuggested) return undefined;
    const wait = Math.min(MAX_HOLD_MS, Math.max(waitMs, 100 * 2 ** holds));
    await sleep(wait);
    heldMs += wait;
  }
}
