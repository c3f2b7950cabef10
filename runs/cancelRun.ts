import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { openTurnsBefore } from '../db/creditReservations';
import { redis } from '../infra/redis';
import { runCancelChannel } from '../domain/streamEvents';
import type { TurnRef } from '../domain/turns';
import { logger } from '../infra/logger';
import { runHandle } from '../workflowClients/agentRun.client';
import { TERMINAL_STATUSES, type RunResponse } from '../domain/runs';
import { temporal } from '../infra/temporalClient';
import { MODEL_HEARTBEAT_TIMEOUT_MS } from '../domain/timings';
import { runAsItStands } from './asItStands';
import type { Principal } from '../callers/principal';

/**
 * Cancels a run's workflow, then announces it to the workers: the one holding the run's model call
 * aborts the provider request at once (Temporal's cancel reaches the call only with a heartbeat's
 * answer), then asks Temporal for that cancel until it comes, and ends cancelled.
 */
export async function cancelRun(handle: WorkflowHandle, runId: string): Promise<void> {
  await handle.cancel();
  // Unheard, the call still stops at its next heartbeat.
  await redis()
    .publish(runCancelChannel(runId), '1')
    .catch((err) => logger.warn({ err: String(err), run_id: runId }, 'run cancel not announced'));
}

/** The run settles cancelled once Temporal's cancel reaches its call (at once when announced, else with its next heartbeat: domain/timings.ts); the answer waits at most this long to show it. */
const CANCEL_WAIT_MS = MODEL_HEARTBEAT_TIMEOUT_MS;

/**
 * The cancel endpoints (/api/v2 and /v1): cancels the caller's run unless it is over, and answers it
 * as it stands once it shows `cancelled` (or after CANCEL_WAIT_MS: a queued run needs a worker).
 * Cancelling a finished run changes nothing.
 */
export async function cancelAndShow(principal: Principal, runId: string): Promise<RunResponse> {
  const run = await runAsItStands(principal, runId);
  if (!TERMINAL_STATUSES.has(run.status)) {
    const handle = runHandle(await temporal(), run.id);
    try {
      await cancelRun(handle, run.id);
      await Promise.race([handle.result().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_MS).unref())]);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return runAsItStands(principal, run.id);
}

/**
 * A message posted with `concurrency: interrupt`: cancels the turns of its conversation still open
 * before it. Each settles cancelled, and the interrupting turn, queued behind them, runs next.
 */
export async function interruptTurnsBefore(client: Client, turn: TurnRef): Promise<void> {
  for (const runId of await openTurnsBefore(turn.conversationId, turn.number)) {
    await cancelRun(runHandle(client, runId), runId).catch((err) => {
      // Over already, or never started (the reconciler gives its hold back, which ends its turn).
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    });
  }
}
