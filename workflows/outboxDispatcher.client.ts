import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { outboxDispatcher } from './outboxDispatcher';
import { SEARCH_ATTRIBUTES, type TaskQueue } from './registry';

/** The dispatcher's one workflow id: visible (and restartable) under it in the Temporal UI. */
export const DISPATCHER_ID = 'outbox-dispatcher';
const QUEUE: TaskQueue = 'webhooks';

/**
 * Starts the dispatcher unless it runs: every worker that polls `webhooks` calls this at start, so a
 * deployment has it without a separate step, and a dispatcher that was terminated comes back with the
 * next worker.
 */
export async function ensureOutboxDispatcher(client: Client): Promise<void> {
  try {
    await client.workflow.start<typeof outboxDispatcher>('outboxDispatcher', {
      taskQueue: QUEUE,
      workflowId: DISPATCHER_ID,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'outbox_dispatcher' }],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
