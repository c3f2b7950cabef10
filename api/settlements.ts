import type { WorkflowHandle } from '@temporalio/client';
import { subscriber } from '../db/redis';
import type { RunOutcome } from '../domain/runs';
import { runSettledChannel } from '../domain/streamEvents';
import { logger } from '../infra/logger';

/**
 * How long an answer waits for its run's announced settlement before it also asks the workflow. An
 * announcement is missed only when a worker died between committing and publishing (its call is
 * retried after the heartbeat timeout, 2 s, anyway) or this connection was down; runs longer than
 * this simply wait on both.
 */
const ANNOUNCEMENT_WAIT_MS = 2_000;

const waiting = new Map<string, (outcome: RunOutcome) => void>();
let listening = false;

function channels() {
  const connection = subscriber();
  if (!listening) {
    listening = true;
    connection.on('message', (channel: string, message: string) => {
      const answer = waiting.get(channel);
      if (!answer) return;
      try {
        answer(JSON.parse(message) as RunOutcome);
      } catch (err) {
        // Not a settlement this service wrote: the answer comes from the workflow instead.
        logger.warn({ err: String(err), channel }, 'unreadable run settlement ignored');
      }
    });
  }
  return connection;
}

export interface Settlement {
  /** Whether the subscription is in place (false when Redis could not take it); the run starts only after it resolves. */
  ready: Promise<boolean>;
  /** The outcome the settling worker published (it never rejects; it may never resolve). */
  outcome: Promise<RunOutcome>;
  stop(): void;
}

/**
 * Listens for a run's settlement, announced by the worker that commits it (RunEvents.announceSettlement).
 * Answering from it spares the client the workflow's last task and the result's long poll: the run is
 * settled (status, bill, events committed) before it is announced, so the answer is final.
 */
export function listenForSettlement(runId: string): Settlement {
  const channel = runSettledChannel(runId);
  const outcome = new Promise<RunOutcome>((resolve) => waiting.set(channel, resolve));
  const ready = channels()
    .subscribe(channel)
    .then(
      () => true,
      (err) => {
        logger.warn({ err: String(err), channel }, 'subscribing to a run settlement failed');
        return false;
      },
    );
  return {
    ready,
    outcome,
    stop() {
      waiting.delete(channel);
      channels()
        .unsubscribe(channel)
        .catch((err) => logger.warn({ err: String(err), channel }, 'unsubscribing from a run settlement failed'));
    },
  };
}

/**
 * The run's outcome: as its settlement announces it, or as its workflow returns it when nothing was
 * announced within ANNOUNCEMENT_WAIT_MS (or nothing could be heard). Both are the same outcome.
 */
export async function outcomeOf(handle: WorkflowHandle, settlement?: Settlement): Promise<RunOutcome> {
  if (!settlement) return handle.result();
  let timer: NodeJS.Timeout | undefined;
  const fromWorkflow = new Promise<RunOutcome>((resolve, reject) => {
    timer = setTimeout(() => handle.result().then(resolve, reject), ANNOUNCEMENT_WAIT_MS);
  });
  try {
    return await Promise.race([settlement.outcome, fromWorkflow]);
  } finally {
    clearTimeout(timer);
  }
}
