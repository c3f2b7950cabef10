import type { Client } from '@temporalio/client';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { workDescribed } from './summaries';

export interface IngestionInput {
  ingestionId: string;
  workspaceId: string;
}

export type IngestionOutcome = 'completed' | 'failed' | 'gone';

/** The workflow as its starters know it: by signature (workflows/knowledgeIngestion.ts), so no workflow code is reached from here. */
type IngestionWorkflow = (input: IngestionInput) => Promise<IngestionOutcome>;

/** Everything the API does with knowledgeIngestion workflows: id (the ingestion id), queue, search attributes and memo. */
export const INGESTION_QUEUE: TaskQueue = QUEUES.background;

/**
 * Starts the ingestion's workflow, or leaves the one already started alone: a request that recorded
 * the ingestion but failed before starting it is healed by the next request for the same document
 * and collection, which finds the ingestion in flight and starts it here.
 */
export async function startIngestionWorkflow(client: Client, input: IngestionInput, correlation: { requestId: string; traceId: string }): Promise<void> {
  await startOnce<IngestionWorkflow>(client, 'knowledgeIngestion', {
    taskQueue: INGESTION_QUEUE,
    workflowId: input.ingestionId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspaceId },
      { key: SEARCH_ATTRIBUTES.kind, value: 'knowledge_ingestion' },
    ],
    memo: { request_id: correlation.requestId, trace_id: correlation.traceId },
    ...workDescribed('knowledge ingestion', input.workspaceId, { ingestion: input.ingestionId, requestId: correlation.requestId, traceId: correlation.traceId }),
  });
}
