import { logger } from '../infra/logger';
import { type RunInput } from '../domain/runs';
import { ZERO_USAGE } from '../domain/usage';
import type { Client } from '@temporalio/client';
import { releaseReservation, staleReservations } from '../db/creditReservations';
import { openRunsOlderThan, runStatus, type OpenRun } from '../db/runs';
import { temporal } from '../infra/temporalClient';
import { describeRun } from '../workflows/agentRun.client';
import { settleRun } from './runs';

/** How many open runs one activity looks at; the workflow asks again while a batch comes back full. */
const BATCH = 100;

/** The settlement's view of a recorded run: everything settleRun reads is on the record. */
function inputOf(run: OpenRun): RunInput {
  return {
    runId: run.runId,
    kind: run.kind,
    requestId: run.requestId,
    traceId: run.traceId,
    workspace: run.workspace,
    agent: { ...run.agent, config: {} },
    input: '',
    attachments: [],
    channel: run.channel,
    metadata: run.metadata,
    requestContext: {},
    options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 0, responseFormat: { type: 'text' } },
    acceptedAt: run.createdAt.getTime(),
  };
}

/**
 * Settles the open runs whose workflow is over (terminated, timed out, failed without settling) or
 * was never there: failed with internal_error, or cancelled when the workflow was cancelled; billed
 * for what their calls recorded as consumed; their stream gets its one terminal event. A run whose
 * workflow is still open is left to it.
 */
export async function settleAbandonedRuns(minAgeMs: number): Promise<{ settled: string[]; released: string[]; more: boolean }> {
  const client = await temporal();
  const open = await openRunsOlderThan(minAgeMs, BATCH);
  const settled: string[] = [];
  for (const run of open) {
    const workflow = await describeRun(client, run.runId);
    if (workflow?.state === 'open') continue;
    const cancelled = workflow?.state === 'cancelled';
    await settleRun({
      input: inputOf(run),
      status: cancelled ? 'cancelled' : 'failed',
      output: [],
      usage: ZERO_USAGE,
      model: 'unknown',
      toolNames: [],
      ...(!cancelled && { error: { code: 'internal_error', message: 'The run stopped before it finished.' } }),
    });
    logger.warn({ run_id: run.runId, workflow: workflow?.state ?? 'missing' }, 'reconciler settled a run its workflow left open');
    settled.push(run.runId);
  }
  const released = await releaseAbandonedReservations(client, minAgeMs);
  // Another batch is worth reading only if this one was full and moved something out of the way.
  return { settled, released, more: (open.length === BATCH && settled.length > 0) || released.length === BATCH };
}

/**
 * Gives back the reservations of runs that never ran: accepted, but their workflow never started, or
 * ended before any worker recorded them (terminated or timed out while queued). A recorded run gives
 * its reservation back when it settles, whether it ends normally or through settleAbandonedRuns.
 */
async function releaseAbandonedReservations(client: Client, minAgeMs: number): Promise<string[]> {
  const released: string[] = [];
  for (const runId of await staleReservations(minAgeMs, BATCH)) {
    if ((await runStatus(runId)) !== undefined) continue;
    if ((await describeRun(client, runId))?.state === 'open') continue;
    const credits = await releaseReservation(runId);
    logger.warn({ run_id: runId, credits }, 'reconciler released the reservation of a run that never ran');
    released.push(runId);
  }
  return released;
}
