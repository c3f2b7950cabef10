import { executeChild, type RetryPolicy } from '@temporalio/workflow';
import type { ExtractionInput } from '../workflowClients/extraction.client';
import { PARALLEL_SEGMENTS } from '../domain/extractions';
import type { RunInput, RunOutcome } from '../domain/runs';
import { agentRun } from './agentRun';
import { runStartOptions } from '../workflowClients/agentRun.options';
import { namedActivities } from './namedActivities';

/** Bookkeeping in PostgreSQL: short and idempotent, retried until it succeeds. */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };
const { holdSegmentCredits, extractionProgress, settleExtraction } = namedActivities(
  { startToCloseTimeout: '30s', retry: BOOKKEEPING_RETRY },
  { holdSegmentCredits: 'hold a segment\'s credits', extractionProgress: 'record progress', settleExtraction: 'settle the extraction' },
);
/** Reading the document: a few tries (a worker that dies, a storage blip); unreadable content is decided inside, not retried. */
const { beginExtraction } = namedActivities(
  { startToCloseTimeout: '10m', heartbeatTimeout: '1m', retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5 } },
  { beginExtraction: 'read and segment the document' },
);

type SegmentResult = { outcome: RunOutcome } | { error: { code: string; message: string } };

/** One segment: its credit hold, then its run (an agentRun child on the agent-runs queue, billed and logged like any run). */
async function segment(run: RunInput, maximum: number): Promise<SegmentResult> {
  if (!(await holdSegmentCredits({ workspaceId: run.workspace.id, runId: run.runId, maximum }))) {
    return { error: { code: 'usage_blocked', message: "The workspace's balance does not cover the extraction; add credits." } };
  }
  try {
    const outcome = await executeChild(agentRun, runStartOptions(run));
    return outcome.error ? { error: outcome.error } : { outcome };
  } catch {
    return { error: { code: 'internal_error', message: 'A segment of the extraction did not finish.' } };
  }
}

/**
 * One extraction: queued → running (the document read and cut into segments, a run planned for each)
 * → completed with what the segments found merged into one value, or → failed with the first
 * failure. Segments run PARALLEL_SEGMENTS at a time; none starts after one has failed.
 */
export async function extraction(input: ExtractionInput): Promise<void> {
  const { extractionId } = input;
  const plan = await beginExtraction(input);
  if (plan.state === 'gone') return;
  if (plan.state === 'failed') return settleExtraction({ extractionId, error: plan.error });
  const outcomes: RunOutcome[] = [];
  for (let from = 0; from < plan.runs.length; from += PARALLEL_SEGMENTS) {
    const results = await Promise.all(plan.runs.slice(from, from + PARALLEL_SEGMENTS).map((run) => segment(run, plan.maximum)));
    for (const result of results) {
      if ('error' in result) return settleExtraction({ extractionId, error: result.error });
      outcomes.push(result.outcome);
    }
    await extractionProgress({ extractionId, segmentsDone: outcomes.length });
  }
  await settleExtraction({ extractionId, outcomes });
}
