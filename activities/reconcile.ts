import { logger } from '../infra/logger';
import { type RunInput } from '../domain/runs';
import { ZERO_USAGE } from '../domain/usage';
import type { Client } from '@temporalio/client';
import { releaseReservation, staleReservations } from '../db/creditReservations';
import { openRunsOlderThan, runStatus, type OpenRun } from '../db/runs';
import { temporal } from '../infra/temporalClient';
import { describeRun } from '../workflowClients/agentRun.client';
import { workflowExists } from '../workflowClients/startOnce';
import { failNeverStarted, queuedOlderThan } from '../db/unstartedWork';
import { settleRun } from './runs';
import { wakeNextTurn } from './turns';
import { purgeCancelRequests } from '../db/runCancelRequests';
import { MAX_RUN_TIMEOUT_MS, RUN_EXECUTION_MARGIN_MS } from '../domain/timings';

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

/** Where a reconciliation pass got to: the last run key and reserved run id it looked at. */
export interface ReconcileCursor {
  runKey: number;
  reservation: string;
}

/**
 * One page of the reconciler's pass. Settles the open runs whose workflow is over (terminated, timed
 * out, failed without settling) or was never there: failed with internal_error, or cancelled when
 * the workflow was cancelled; billed for what their calls recorded as consumed; their stream gets its
 * one terminal event. A run whose workflow is still open is left to it. Then gives back the holds of
 * runs that never ran. Pages move on by cursor, so live runs never hide abandoned ones behind them.
 */
export async function settleAbandonedRuns(minAgeMs: number, cursor: ReconcileCursor = { runKey: 0, reservation: '' }): Promise<{ settled: string[]; released: string[]; next?: ReconcileCursor }> {
  const client = await temporal();
  const open = await openRunsOlderThan(minAgeMs, cursor.runKey, BATCH);
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
      reconciled: true,
    });
    logger.warn({ run_id: run.runId, workflow: workflow?.state ?? 'missing' }, 'reconciler settled a run its workflow left open');
    settled.push(run.runId);
  }
  const held = await staleReservations(minAgeMs, cursor.reservation, BATCH);
  const released = await releaseAbandonedReservations(client, held, minAgeMs);
  const full = open.length === BATCH || held.length === BATCH;
  return { settled, released, ...(full && { next: { runKey: open.at(-1)?.runKey ?? cursor.runKey, reservation: held.at(-1) ?? cursor.reservation } }) };
}

/**
 * Gives back the reservations of runs that never ran: accepted, but their workflow never started, or
 * ended before any worker recorded them (terminated or timed out while queued). A recorded run gives
 * its reservation back when it settles, whether it ends normally or through the pass above.
 */
async function releaseAbandonedReservations(client: Client, runIds: string[], minAgeMs: number): Promise<string[]> {
  const released: string[] = [];
  for (const runId of runIds) {
    if ((await runStatus(runId)) !== undefined) continue;
    if ((await describeRun(client, runId))?.state === 'open') continue;
    const { credits, conversationId } = await releaseReservation(runId, minAgeMs);
    if (credits === 0) continue;
    logger.warn({ run_id: runId, credits }, 'reconciler released the reservation of a run that never ran');
    released.push(runId);
    // The hold was a message's turn: the next turn of its conversation may run now.
    if (conversationId !== null) await wakeNextTurn(conversationId);
  }
  return released;
}

/**
 * Fails the background work (reports, extractions, jobs, ingestions) still queued past `minAgeMs`
 * with no workflow: the request that recorded it died before starting it and was never retried (a
 * retry would have started it). Its credit holds, if any, are given back by the pass above.
 */
export async function failUnstartedWork(minAgeMs: number): Promise<string[]> {
  const client = await temporal();
  const failed: string[] = [];
  for (const kind of ['report', 'extraction', 'job', 'ingestion'] as const) {
    for (const id of await queuedOlderThan(kind, minAgeMs, BATCH)) {
      if (await workflowExists(client, id)) continue;
      if (!(await failNeverStarted(kind, id))) continue;
      logger.warn({ [`${kind}_id`]: id }, 'reconciler failed work whose workflow never started');
      failed.push(id);
    }
  }
  return failed;
}

/**
 * Deletes recorded cancels that no run can read any more: a cancel is read only by its run's own
 * settlement, and no run outlives the longest timeout_ms plus its workflow's execution margin.
 */
export async function purgeCancelRecords(): Promise<number> {
  return purgeCancelRequests(MAX_RUN_TIMEOUT_MS + RUN_EXECUTION_MARGIN_MS);
}
