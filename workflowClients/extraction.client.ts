import type { Client } from '@temporalio/client';
import type { RunInput } from '../domain/runs';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { workDescribed } from './summaries';

/** Everything the API does with extraction workflows: id (the extraction id), queue, search attributes and memo. */
export const EXTRACTION_QUEUE: TaskQueue = QUEUES.background;

export interface ExtractionInput {
  extractionId: string;
  workspace: RunInput['workspace'];
}

/** The workflow as its starters know it: by signature (workflows/extraction.ts), so no workflow code is reached from here. */
type ExtractionWorkflow = (input: ExtractionInput) => Promise<void>;

/** Starts the extraction's workflow, or leaves the one already started alone (a retried request). */
export async function startExtractionWorkflow(client: Client, input: ExtractionInput, correlation: { agent: string; requestId: string; traceId: string }): Promise<void> {
  await startOnce<ExtractionWorkflow>(client, 'extraction', {
    taskQueue: EXTRACTION_QUEUE,
    workflowId: input.extractionId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspace.publicId },
      { key: SEARCH_ATTRIBUTES.agentId, value: correlation.agent },
      { key: SEARCH_ATTRIBUTES.kind, value: 'extraction' },
    ],
    memo: { request_id: correlation.requestId, trace_id: correlation.traceId },
    ...workDescribed('extraction', input.workspace.publicId, { extraction: input.extractionId, agent: correlation.agent, requestId: correlation.requestId, traceId: correlation.traceId }),
  });
}
