import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowStartOptions } from '@temporalio/client';
import type { webhookDelivery, WebhookDeliveryInput } from './webhookDelivery';
import { SEARCH_ATTRIBUTES, type TaskQueue } from './registry';

/** How webhook delivery workflows are started: id (the delivery id), queue, search attributes. */
export const WEBHOOK_QUEUE: TaskQueue = 'webhooks';

export interface DeliveryStart {
  deliveryId: string;
  /** The merchant's workspace, so an operator can filter deliveries by it in the Temporal UI. */
  workspacePublicId: string;
  firstAttempt: number;
  retryDelaysMs: number[];
}

function options(s: DeliveryStart): WorkflowStartOptions<typeof webhookDelivery> {
  const input: WebhookDeliveryInput = { deliveryId: s.deliveryId, firstAttempt: s.firstAttempt, retryDelaysMs: s.retryDelaysMs };
  return {
    taskQueue: WEBHOOK_QUEUE,
    workflowId: s.deliveryId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: s.workspacePublicId },
      { key: SEARCH_ATTRIBUTES.kind, value: 'webhook_delivery' },
    ],
  };
}

/**
 * Starts a pending delivery's workflow, or leaves the one running under its id alone (a dispatcher
 * retried after a crash). A closed one is started again: the delivery is pending only because it was
 * reopened for a resend, or because its last run was terminated before it finished.
 */
export async function startDelivery(client: Client, s: DeliveryStart): Promise<void> {
  try {
    await client.workflow.start<typeof webhookDelivery>('webhookDelivery', { ...options(s), workflowIdConflictPolicy: 'USE_EXISTING', workflowIdReusePolicy: 'ALLOW_DUPLICATE' });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
