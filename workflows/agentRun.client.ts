import { isGrpcServiceError, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { RunInput, RunResponse } from '../domain/runs';
import type { agentRun } from './agentRun';
import { SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { RUN_EXECUTION_MARGIN_MS } from './timings';

/**
 * Everything the API does with agentRun workflows: the workflow id (the run id), the queue, the
 * search attributes, the memo and the execution timeout live here and nowhere else.
 */
export const RUN_QUEUE: TaskQueue = 'agent-runs';

/** What describes a run that no worker has recorded yet (queued): kept in the memo, never decoded from history. */
export type QueuedRunMemo = Pick<RunResponse, 'agent' | 'agent_version' | 'metadata' | 'request_id' | 'trace_id'> & { conversation?: string };

export type RunHandle = WorkflowHandle<typeof agentRun>;

/**
 * Starts the run, or attaches to it when a workflow with its id exists already (a retried request
 * that reached Temporal before): a run id is started at most once, ever.
 */
export async function startRun(client: Client, input: RunInput, options: { taskQueue?: string } = {}): Promise<RunHandle> {
  const memo: QueuedRunMemo = {
    agent: input.agent.publicId,
    agent_version: input.agent.version,
    metadata: input.metadata,
    request_id: input.requestId,
    trace_id: input.traceId,
    ...(input.kind !== 'response' && input.conversation && { conversation: input.conversation.publicId }),
  };
  try {
    return await client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue: options.taskQueue ?? RUN_QUEUE,
      workflowId: input.runId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowExecutionTimeout: input.options.timeoutMs + RUN_EXECUTION_MARGIN_MS,
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspace.publicId },
        { key: SEARCH_ATTRIBUTES.agentId, value: input.agent.publicId },
        { key: SEARCH_ATTRIBUTES.kind, value: input.kind },
      ],
      memo: { ...memo },
    });
  } catch (err) {
    // The run ran and closed already: attach to it; its outcome is the answer.
    if (err instanceof WorkflowExecutionAlreadyStartedError) return runHandle(client, input.runId);
    throw err;
  }
}

export function runHandle(client: Client, runId: string): RunHandle {
  return client.workflow.getHandle<typeof agentRun>(runId);
}

export type RunWorkflowState = 'open' | 'completed' | 'cancelled' | 'ended';

export interface RunDescription {
  workspace: string | undefined;
  kind: string | undefined;
  /** open: running or waiting for a worker; completed/cancelled: it returned; ended: failed, terminated or timed out without settling. */
  state: RunWorkflowState;
  memo: QueuedRunMemo;
}

const GRPC_NOT_FOUND = 5;

const STATES: Record<string, RunWorkflowState> = { RUNNING: 'open', COMPLETED: 'completed', CANCELLED: 'cancelled', CONTINUED_AS_NEW: 'open' };

/** The run's workflow as Temporal sees it, without reading its history; undefined when there is none. */
export async function describeRun(client: Client, runId: string): Promise<RunDescription | undefined> {
  try {
    const d = await runHandle(client, runId).describe();
    return {
      workspace: d.typedSearchAttributes.get(SEARCH_ATTRIBUTES.workspaceId),
      kind: d.typedSearchAttributes.get(SEARCH_ATTRIBUTES.kind),
      state: STATES[d.status.name] ?? 'ended',
      memo: (d.memo ?? {}) as unknown as QueuedRunMemo,
    };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND)) return undefined;
    throw err;
  }
}
