import { defineSignal, defineUpdate } from '@temporalio/workflow';
import { toolRoundsOf } from '../domain/limits';
import { longestWaitMs, type ActionAnswer, type ActionOutcome } from '../domain/actions';
import type { RunInput, RunOutcome, RunResponse } from '../domain/runs';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { runDescribed } from './summaries';
import { RUN_EXECUTION_MARGIN_MS } from '../domain/timings';

/**
 * What an agentRun workflow takes and returns: its starters (agentRun.client.ts, which the
 * reconciler's activity calls too) type their handles with it, so no activity imports the workflow.
 */
export type AgentRunWorkflow = (input: RunInput) => Promise<RunOutcome>;

/** Sent to a queued turn when a turn of its conversation ends: it looks whether it is next. */
export const turnEnded = defineSignal('turnEnded');

/**
 * A caller's answer to a tool call the run waits on (POST /runs/{id}/actions): validated before it is
 * accepted (a call the run does not wait on, or the wrong kind of answer, never reaches history), and
 * answered with what became of the call once that is recorded. Its update id is the call's, per round.
 */
export const answerAction = defineUpdate<ActionOutcome, [ActionAnswer]>('answerAction');

/** The queue agentRun workflows run on. */
export const RUN_QUEUE: TaskQueue = QUEUES.runs;

/** What describes a run that no worker has recorded yet (queued): kept in the memo, never decoded from history. */
export type QueuedRunMemo = Pick<RunResponse, 'agent' | 'agent_version' | 'metadata' | 'request_id' | 'trace_id'> & { conversation?: string };

/**
 * How every agentRun starts, whoever starts it (the API's client, or a report's workflow as its
 * child): the run id as workflow id, the queue, the execution timeout, search attributes and memo.
 * No client imports: workflow code uses it too.
 */
export function runStartOptions(input: RunInput, taskQueue: string = RUN_QUEUE) {
  const memo: QueuedRunMemo = {
    agent: input.agent.publicId,
    agent_version: input.agent.version,
    metadata: input.metadata,
    request_id: input.requestId,
    trace_id: input.traceId,
    ...(input.kind !== 'response' && input.conversation && { conversation: input.conversation.publicId }),
  };
  return {
    taskQueue,
    workflowId: input.runId,
    args: [input] as [RunInput],
    // A run that may wait for people has room for its waits (the wait is not part of timeout_ms).
    workflowExecutionTimeout: input.options.timeoutMs + RUN_EXECUTION_MARGIN_MS + longestWaitMs(input.agent.config, toolRoundsOf(input.limits)),
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: input.workspace.publicId },
      { key: SEARCH_ATTRIBUTES.agentId, value: input.agent.publicId },
      { key: SEARCH_ATTRIBUTES.kind, value: input.kind },
    ],
    memo: { ...memo },
    ...runDescribed(input),
  };
}
