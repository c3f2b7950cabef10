import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { JobType } from '../domain/jobs';
import type { RunInput } from '../domain/runs';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { workDescribed } from './summaries';

export interface JobInput {
  jobId: string;
  type: JobType;
  params: Record<string, unknown>;
  workspace: RunInput['workspace'];
  /** Where this execution starts: a job continues as new every ITEMS_PER_EXECUTION items. */
  fromSeq: number;
}

/** The workflow as its starters know it: by signature (workflows/job.ts), so no workflow code is reached from here. */
type JobWorkflow = (input: JobInput) => Promise<void>;

/** Everything the API does with job workflows: id (the job id), queue, search attributes, memo, cancel. */
export const JOB_QUEUE: TaskQueue = QUEUES.background;

/** Starts the job's workflow, or leaves the one already started alone (a retried request). */
export async function startJobWorkflow(client: Client, input: JobInput, correlation: { requestId: string; traceId: string }): Promise<void> {
  await startOnce<JobWorkflow>(client, 'job', {
    taskQueue: JOB_QUEUE,
    workflowId: input.jobId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspace.publicId },
      { key: SEARCH_ATTRIBUTES.kind, value: 'job' },
    ],
    memo: { request_id: correlation.requestId, trace_id: correlation.traceId, type: input.type },
    ...workDescribed(`job ${input.type}`, input.workspace.publicId, { job: input.jobId, requestId: correlation.requestId, traceId: correlation.traceId }),
  });
}

/** Asks the job's workflow (its current execution) to stop; one that has ended is left alone. */
export async function cancelJobWorkflow(client: Client, jobId: string): Promise<void> {
  try {
    await client.workflow.getHandle(jobId).cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
