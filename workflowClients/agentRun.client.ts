import { isGrpcServiceError, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { RunInput } from '../domain/runs';
import { answerAction, RUN_QUEUE, runStartOptions, turnEnded, type AgentRunWorkflow, type QueuedRunMemo } from './agentRun.options';
import type { ActionAnswer, ActionOutcome } from '../domain/actions';
import { SEARCH_ATTRIBUTES } from './registry';
import { sharesWorkerConnection } from '../infra/temporalClient';

/**
 * Everything the API does with agentRun workflows: starting (with agentRun.options.ts, shared with
 * workflows that start runs as children), attaching and describing.
 */
export { RUN_QUEUE, type QueuedRunMemo } from './agentRun.options';

export type RunHandle = WorkflowHandle<AgentRunWorkflow>;

/**
 * Starts the run, or attaches to it when a workflow with its id exists already (a retried request
 * that reached Temporal before): a run id is started at most once, ever. A client that shares its
 * connection with this process's run worker (RUNS_IN_API) asks for the first workflow task in the
 * answer, when the run is on that worker's queue.
 */
export async function startRun(client: Client, input: RunInput, options: { taskQueue?: string } = {}): Promise<RunHandle> {
  try {
    return await client.workflow.start<AgentRunWorkflow>('agentRun', {
      ...runStartOptions(input, options.taskQueue),
      requestEagerStart: sharesWorkerConnection(client) && (options.taskQueue ?? RUN_QUEUE) === RUN_QUEUE,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    // The run ran and closed already: attach to it; its outcome is the answer.
    if (err instanceof WorkflowExecutionAlreadyStartedError) return runHandle(client, input.runId);
    throw err;
  }
}

export function runHandle(client: Client, runId: string): RunHandle {
  return client.workflow.getHandle<AgentRunWorkflow>(runId);
}

const GRPC_NOT_FOUND = 5;

/** No such workflow: the SDK's error, or the server's NOT_FOUND as some calls pass it on unwrapped. */
export const isMissing = (err: unknown) => err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND);

/** Tells a queued turn that a turn of its conversation ended; a run that is over or never started needs no telling. */
export async function wakeTurn(client: Client, runId: string): Promise<void> {
  try {
    await runHandle(client, runId).signal(turnEnded);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
}

/**
 * Answers a call the run waits on, once: the update's id is the call's (per round), so a second answer
 * to the same call, however it differs, gets the first one's outcome (Temporal deduplicates it).
 */
export function answerRunAction(client: Client, runId: string, updateId: string, answer: ActionAnswer): Promise<ActionOutcome> {
  return runHandle(client, runId).executeUpdate(answerAction, { args: [answer], updateId });
}

export type RunWorkflowState = 'open' | 'completed' | 'cancelled' | 'ended';

export interface RunDescription {
  workspace: string | undefined;
  kind: string | undefined;
  /** open: running or waiting for a worker; completed/cancelled: it returned; ended: failed, terminated or timed out without settling. */
  state: RunWorkflowState;
  memo: QueuedRunMemo;
}


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
    if (isMissing(err)) return undefined;
    throw err;
  }
}
