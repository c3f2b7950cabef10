import { executeChild, type RetryPolicy } from '@temporalio/workflow';
import type { ReportInput } from '../workflowClients/report.client';
import type { RunOutcome } from '../domain/runs';
import { agentRun } from './agentRun';
import { runStartOptions } from '../workflowClients/agentRun.options';
import { namedActivities } from './namedActivities';

/** Bookkeeping in PostgreSQL: short and idempotent, retried until it succeeds. */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };
const { reportStarted, reportSettled } = namedActivities(
  { startToCloseTimeout: '30s', retry: BOOKKEEPING_RETRY },
  { reportStarted: 'record the report as running', reportSettled: 'settle the report with the run\'s answer' },
);

/**
 * One report: queued → running (its run started as a child workflow on the agent-runs queue) →
 * completed with the run's answer as its result, or → failed with the run's error.
 */
export async function report(input: ReportInput): Promise<void> {
  await reportStarted(input.reportId);
  let outcome: RunOutcome | undefined;
  try {
    outcome = await executeChild(agentRun, runStartOptions(input.run));
  } catch {
    // The run ended without settling (terminated, timed out): the reconciler settles it; the report fails.
    outcome = undefined;
  }
  await reportSettled({ reportId: input.reportId, format: input.format, outcome });
}
