import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowStartOptions } from '@temporalio/client';
import type { Workflow } from '@temporalio/workflow';

/**
 * Starts a background workflow whose id is its resource's public id, at most once ever: a workflow
 * already running under the id is left alone (USE_EXISTING), and one that has closed is not started
 * again (REJECT_DUPLICATE). So a retried request, or one that heals an earlier request's crash between
 * recording the resource and starting its work, can always call it.
 */
export async function startOnce<W extends Workflow>(client: Client, workflowType: string, options: WorkflowStartOptions<W>): Promise<void> {
  try {
    await client.workflow.start<W>(workflowType, { ...options, workflowIdConflictPolicy: 'USE_EXISTING', workflowIdReusePolicy: 'REJECT_DUPLICATE' } as WorkflowStartOptions<W>);
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** Whether a workflow was ever started under this id (Temporal still knows it). */
export async function workflowExists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
