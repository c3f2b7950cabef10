import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { openTurnsBefore } from '../db/creditReservations';
import { redis } from '../db/redis';
import { runCancelChannel } from '../domain/streamEvents';
import type { TurnRef } from '../domain/turns';
import { logger } from '../infra/logger';
import { runHandle } from '../workflows/agentRun.client';

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
