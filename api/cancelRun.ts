import type { WorkflowHandle } from '@temporalio/client';
import { redis } from '../db/redis';
import { runCancelChannel } from '../domain/streamEvents';
import { logger } from '../infra/logger';

/**
 * Cancels a run's workflow, then announces it to the workers: the one holding the run's model call
 * aborts the provider request at once (Temporal's cancel reaches the call only with a heartbeat's
 * answer, seconds later), and the call ends cancelled once that cancel arrives.
 */
export async function cancelRun(handle: WorkflowHandle, runId: string): Promise<void> {
  await handle.cancel();
  // Unheard, the call still stops at its next heartbeat.
  await redis()
    .publish(runCancelChannel(runId), '1')
    .catch((err) => logger.warn({ err: String(err), run_id: runId }, 'run cancel not announced'));
}
