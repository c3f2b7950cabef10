import type { WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { subscriber } from '../infra/redis';
import type { RunOutcome } from '../domain/runs';
import { runChannel, STREAM_MOVED, WAITING } from '../domain/streamEvents';
import { logger } from '../infra/logger';
import { unavailableDependency } from '../infra/dependencyErrors';

/**
 * When an answer first asks the run's workflow whether it closed without an announcement, and the
 * longest it then waits between two asks. An announcement is missed only when a worker died between
 * committing and publishing (its retried call announces again) or this connection was down, or when
 * the workflow ended without settling (timed out, terminated). The asks are describes at growing
 * intervals, not a long poll per waiting run: Temporal bounds concurrent long polls per namespace, and
 * thousands of runs wait at once. The first comes late because runs wait together when the machine is
 * full: asked at 2 s, every queued run then described its workflow once or more, on the cores the
 * queue waited for (docs/performance.md).
 */
const FIRST_ASK_MS = 10_000;
const LONGEST_ASK_INTERVAL_MS = 30_000;

/** What a run's channel announces: its outcome, or the news that it waits for people (WAITING); its stream's news (STREAM_MOVED) is not an announcement. */
type Announcement = RunOutcome | typeof WAITING;

interface Listener {
  announce(announcement: Announcement): void;
  /** A stream's relay: its stream has new entries. */
  moved?(): void;
}

/** Who listens on each run's channel: a request waiting for the run, the relays of its stream (one run may have several in a process). */
const waiting = new Map<string, Set<Listener>>();
let listening = false;

function channels() {
  const connection = subscriber();
  if (!listening) {
    listening = true;
    connection.on('message', (channel: string, message: string) => {
      const listeners = waiting.get(channel);
      if (!listeners) return;
      if (message === STREAM_MOVED) {
        for (const l of listeners) l.moved?.();
        return;
      }
      let announcement: Announcement;
      try {
        announcement = JSON.parse(message) as Announcement;
      } catch (err) {
        // Not a settlement this service wrote: the answer comes from the workflow instead.
        logger.warn({ err: String(err), channel }, 'unreadable run settlement ignored');
        return;
      }
      for (const l of listeners) l.announce(announcement);
    });
  }
  return connection;
}

export interface Settlement {
  /** Whether the subscription is in place (false when Redis could not take it); the run starts only after it resolves. */
  ready: Promise<boolean>;
  /** The outcome the settling worker published (it never rejects; it may never resolve). */
  outcome: Promise<RunOutcome>;
  /** Resolves when the run begins to wait for people (docs/api.md, "Actions"); it may never resolve. */
  waitsForPeople: Promise<void>;
  /** Resolves when the run next begins to wait for people, after this call (a later round's wait). */
  nextWait(): Promise<void>;
  /** Aborted by stop(): nothing more is asked about the run. */
  signal: AbortSignal;
  stop(): void;
}

/**
 * Listens for a run's settlement, announced by the worker that commits it (RunEvents.announceSettlement).
 * Answering from it spares the client the workflow's last task and the result's long poll: the run is
 * settled (status, bill, events committed) before it is announced, so the answer is final.
 */
export function listenForSettlement(runId: string, onStreamMoved?: () => void): Settlement {
  const channel = runChannel(runId);
  let settle!: (outcome: RunOutcome) => void;
  let wait!: () => void;
  const outcome = new Promise<RunOutcome>((resolve) => (settle = resolve));
  const waitsForPeople = new Promise<void>((resolve) => (wait = resolve));
  let nextWaits: (() => void)[] = [];
  const waits = () => {
    wait();
    const woken = nextWaits;
    nextWaits = [];
    for (const resolve of woken) resolve();
  };
  const listener: Listener = { announce: (announcement) => ('run' in announcement ? settle(announcement) : waits()), moved: onStreamMoved };
  let listeners = waiting.get(channel);
  if (!listeners) waiting.set(channel, (listeners = new Set()));
  listeners.add(listener);
  const stopped = new AbortController();
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
    waitsForPeople,
    nextWait: () => new Promise<void>((resolve) => nextWaits.push(resolve)),
    signal: stopped.signal,
    stop() {
      stopped.abort();
      listeners.delete(listener);
      // The channel is left only by its last listener in this process.
      if (listeners.size > 0 || waiting.get(channel) !== listeners) return;
      waiting.delete(channel);
      channels()
        .unsubscribe(channel)
        .catch((err) => logger.warn({ err: String(err), channel }, 'unsubscribing from a run settlement failed'));
    },
  };
}

export interface AskOptions {
  /** When the workflow is first asked (FIRST_ASK_MS by default; 0 for a stream resumed, whose run may be long over). */
  firstAskMs?: number;
  /** When the run last showed it is alive (its stream's latest entry, as Date.now()): a run heard from since the last ask is not asked about. */
  heardAt?: () => number;
}

/**
 * The workflow's result once it has closed; asked at growing intervals until `signal` aborts (then it
 * never resolves). A streamed run's deltas show it alive, so while they come its workflow is not
 * described: a describe every few seconds of every long stream was a fifth of the requests Temporal
 * served per run (docs/performance.md).
 */
async function closedWorkflowOutcome(handle: WorkflowHandle, signal: AbortSignal, { firstAskMs = FIRST_ASK_MS, heardAt }: AskOptions): Promise<RunOutcome> {
  try {
    for (let wait = firstAskMs; ; ) {
      const from = Date.now();
      await sleep(wait, undefined, { signal });
      if (heardAt && heardAt() >= from) {
        wait = Math.max(wait, FIRST_ASK_MS);
        continue;
      }
      let status;
      try {
        ({ status } = await handle.describe());
      } catch (err) {
        // Temporal restarting: the run goes on, and so does the wait (its announcement may come first), asking no sooner than usual.
        if (unavailableDependency(err) !== 'temporal') throw err;
        wait = Math.max(wait, FIRST_ASK_MS);
        continue;
      }
      if (signal.aborted) break;
      if (status.name !== 'RUNNING' && status.name !== 'CONTINUED_AS_NEW') return await handle.result();
      wait = Math.min(Math.max(wait, FIRST_ASK_MS) * 2, LONGEST_ASK_INTERVAL_MS);
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
  return new Promise<RunOutcome>(() => undefined);
}

/**
 * The run's outcome: as its settlement announces it, or as its workflow returns it once closed when
 * nothing was announced. Both are the same outcome. Without a settlement to listen to (Redis refused
 * the subscription) it long-polls the workflow.
 */
export async function outcomeOf(handle: WorkflowHandle, settlement?: Settlement, ask: AskOptions = {}): Promise<RunOutcome> {
  if (!settlement) return handle.result();
  return Promise.race([settlement.outcome, closedWorkflowOutcome(handle, settlement.signal, ask)]);
}
