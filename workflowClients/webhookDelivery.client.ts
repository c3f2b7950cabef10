import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import type { WebhookDeliveryInput, WebhookDeliveryWorkflow } from './webhookDelivery.signature';
import { serviceDescribed } from './summaries';

/** How webhook delivery workflows are started: id, queue, search attributes. */
export const WEBHOOK_QUEUE: TaskQueue = QUEUES.webhooks;

export interface DeliveryStart {
  deliveryId: string;
  /** Raised by each resend; each generation is a workflow of its own. */
  generation: number;
  /** The merchant's workspace, so an operator can filter deliveries by it in the Temporal UI. */
  workspacePublicId: string;
  firstAttempt: number;
  retryDelaysMs: number[];
}

/**
 * The delivery id, and for a resend the delivery id and its generation (`dlv_…-resend-2`): the query
 * `WorkflowId STARTS_WITH "dlv_…"` finds every send of a delivery in the Temporal UI.
 */
export function deliveryWorkflowId(deliveryId: string, generation: number): string {
  return generation === 0 ? deliveryId : `${deliveryId}-resend-${generation}`;
}

/** Starts one generation of a delivery, at most once however often asked (a dispatcher pass retried after a crash). */
export async function startDelivery(client: Client, s: DeliveryStart): Promise<void> {
  const input: WebhookDeliveryInput = { deliveryId: s.deliveryId, generation: s.generation, firstAttempt: s.firstAttempt, retryDelaysMs: s.retryDelaysMs };
  await startOnce<WebhookDeliveryWorkflow>(client, 'webhookDelivery', {
    taskQueue: WEBHOOK_QUEUE,
    workflowId: deliveryWorkflowId(s.deliveryId, s.generation),
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: s.workspacePublicId },
      { key: SEARCH_ATTRIBUTES.kind, value: 'webhook_delivery' },
    ],
    ...serviceDescribed(['webhook delivery', s.generation > 0 ? `resend ${s.generation}` : undefined, s.workspacePublicId], { delivery: s.deliveryId, first_attempt: s.firstAttempt }),
  });
}

/** Whether the delivery's current generation has a workflow running (a resend of a pending delivery is refused while it has). */
export async function deliveryRunning(client: Client, deliveryId: string, generation: number): Promise<boolean> {
  try {
    const { status } = await client.workflow.getHandle(deliveryWorkflowId(deliveryId, generation)).describe();
    return status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
