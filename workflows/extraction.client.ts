import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { extraction, ExtractionInput } from './extraction';
import { SEARCH_ATTRIBUTES, type TaskQueue } from './registry';

/** Everything the API does with extraction workflows: id (the extraction id), queue, search attributes and memo. */
export const EXTRACTION_QUEUE: TaskQueue = 'background';

/** Starts the extraction's workflow, or leaves the one already started alone (a retried request). */
export async function startExtractionWorkflow(client: Client, input: ExtractionInput, correlation: { agent: string; requestId: string; traceId: string }): Promise<void> {
  try {
    await client.workflow.start<typeof extraction>('extraction', {
      taskQueue: EXTRACTION_QUEUE,
      workflowId: input.extractionId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspace.publicId },
        { key: SEARCH_ATTRIBUTES.agentId, value: correlation.agent },
        { key: SEARCH_ATTRIBUTES.kind, value: 'extraction' },
      ],
      memo: { request_id: correlation.requestId, trace_id: correlation.traceId },
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
