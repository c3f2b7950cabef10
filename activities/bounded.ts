import { ApplicationFailure, Context } from '@temporalio/activity';
import { timedOut, type Deadline } from '../domain/runs';
import { HEARTBEAT_INTERVAL_MS } from '../domain/timings';


/**
 * Heartbeats every interval while a cancellable activity runs, so that no step of it (its bookkeeping
 * included) outlasts the heartbeat timeout unnoticed, and a cancellation reaches it. None at its start:
 * each heartbeat is a request and a write of the workflow's state, which a call shorter than one
 * interval (most of them) is spared.
 */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  let timer: NodeJS.Timeout;
  const beat = () => {
    ctx.heartbeat();
    timer = setTimeout(beat, HEARTBEAT_INTERVAL_MS);
  };
  timer = setTimeout(beat, firstHeartbeatIn(ctx));
  try {
    return await work();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The server counts the heartbeat timeout from the attempt's start, which for a call dispatched
 * eagerly (in the answer to the workflow task that scheduled it) is when it was scheduled, however
 * long its code then waited for this busy process: the first heartbeat comes one interval after the
 * scheduling, at once if the code started later than that, so a slow start never times the call out
 * and sends it to its provider twice. A call that waited in Temporal's queue instead heartbeats
 * sooner than it needs to. Never later than one interval from now (a clock behind the server's); a
 * clock ahead of it makes the first heartbeat sooner (NTP keeps hosts within milliseconds).
 */
function firstHeartbeatIn(ctx: Context): number {
  const sinceScheduled = Date.now() - ctx.info.currentAttemptScheduledTimestampMs;
  return Math.min(HEARTBEAT_INTERVAL_MS, Math.max(0, HEARTBEAT_INTERVAL_MS - sinceScheduled));
}

/**
 * For loops that heartbeat at each turn: the worker holds back only heartbeats closer together than
 * CANCEL_CONFIRM_FIRST_MS (its throttle, short for cancels), so a loop that turns faster paces its
 * own. The first call heartbeats.
 */
export function pacedHeartbeat(ctx: Context, everyMs: number): () => void {
  let next = 0;
  return () => {
    if (Date.now() < next) return;
    next = Date.now() + everyMs;
    ctx.heartbeat();
  };
}

/** Aborts a call when its activity is cancelled or when the run's deadline comes, whichever is first. */
export function callSignal(deadline: Deadline): AbortSignal {
  return AbortSignal.any([Context.current().cancellationSignal, AbortSignal.timeout(Math.max(0, deadline.at - Date.now()))]);
}

/** How a call that reached the run's deadline fails the run: finally, never retried. */
export function deadlineFailure(deadline: Deadline): ApplicationFailure {
  const { code, message } = timedOut(deadline);
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}
