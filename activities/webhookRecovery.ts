import { failedDeliveriesIn, reopenDeliveries } from '../db/webhookDeliveries';

const PAGE = 200;

/**
 * Reopens one page of an endpoint's failed (or skipped) deliveries created in [since, until): pending
 * and not started, so the dispatcher (the one starter of delivery workflows) sends each again.
 */
export async function recoverDeliveries(r: { endpointId: string; since: string; until: string; after?: string }): Promise<{ last?: string; resent: number }> {
  const ids = await failedDeliveriesIn(r.endpointId, new Date(r.since), new Date(r.until), r.after, PAGE);
  const reopened = await reopenDeliveries(ids);
  return { last: ids.at(-1), resent: reopened.length };
}
