import type { WebhookRecoveryInput } from '../workflowClients/webhookRecovery.client';
import { namedActivities } from './namedActivities';

const { recoverDeliveries } = namedActivities(
  { startToCloseTimeout: '2m', retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' } },
  { recoverDeliveries: 'reopen the window\'s failed and skipped deliveries' },
);

/**
 * `POST …/endpoints/{id}/recover`: every failed or skipped delivery of the endpoint in the window is
 * sent again (a new run of its own delivery workflow), a page at a time. A page retried after a crash
 * reopens only what is not pending already, so nothing is sent twice by the recovery itself.
 */
export async function webhookRecovery(input: WebhookRecoveryInput): Promise<{ resent: number }> {
  let resent = 0;
  let after: string | undefined;
  for (;;) {
    const page = await recoverDeliveries({ endpointId: input.endpointId, since: input.since, until: input.until, after });
    resent += page.resent;
    if (page.last === undefined) return { resent };
    after = page.last;
  }
}
