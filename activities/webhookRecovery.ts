import { failedDeliveriesIn, reopenDeliveries } from '../db/webhookDeliveries';
import { startDeliveries } from './outbox';

const PAGE = 200;

/** Reopens and starts anew one page of an endpoint's failed (or skipped) deliveries created in [since, until). */
export async function recoverDeliveries(r: { endpointId: string; since: string; until: string; after?: string }): Promise<{ last?: string; resent: number }> {
  const ids = await failedDeliveriesIn(r.endpointId, new Date(r.since), new Date(r.until), r.after, PAGE);
  const reopened = await reopenDeliveries(ids);
  await startDeliveries(reopened);
  return { last: ids.at(-1), resent: reopened.length };
}
