import type { Client } from '@temporalio/client';
import type { webhookRecovery, WebhookRecoveryInput } from './webhookRecovery';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { serviceDescribed } from './summaries';

const QUEUE: TaskQueue = QUEUES.webhooks;

/** Starts a recovery under its own id (`rcv_…`), which the API returns so an operator can follow it. */
export async function startRecovery(client: Client, input: WebhookRecoveryInput): Promise<void> {
  await startOnce<typeof webhookRecovery>(client, 'webhookRecovery', {
    taskQueue: QUEUE,
    workflowId: input.recoveryId,
    args: [input],
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'webhook_recovery' }],
    ...serviceDescribed(['webhook recovery', input.endpointId], { since: input.since, until: input.until }),
  });
}
