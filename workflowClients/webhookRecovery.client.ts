import type { Client } from '@temporalio/client';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { serviceDescribed } from './summaries';

export interface WebhookRecoveryInput {
  recoveryId: string;
  endpointId: string;
  /** ISO 8601: deliveries created at or after `since` and before `until`. */
  since: string;
  until: string;
}

/** The workflow as its starters know it: by signature (workflows/webhookRecovery.ts), so no workflow code is reached from here. */
type WebhookRecoveryWorkflow = (input: WebhookRecoveryInput) => Promise<{ resent: number }>;

const QUEUE: TaskQueue = QUEUES.webhooks;

/** Starts a recovery under its own id (`rcv_…`), which the API returns so an operator can follow it. */
export async function startRecovery(client: Client, input: WebhookRecoveryInput): Promise<void> {
  await startOnce<WebhookRecoveryWorkflow>(client, 'webhookRecovery', {
    taskQueue: QUEUE,
    workflowId: input.recoveryId,
    args: [input],
    typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'webhook_recovery' }],
    ...serviceDescribed(['webhook recovery', input.endpointId], { since: input.since, until: input.until }),
  });
}
