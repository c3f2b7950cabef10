/**
 * Timings that depend on one another, together, each with why. Workflow code, activities, the API
 * and the worker read them from here (no Node imports: the workflow bundle includes this file).
 */

/** Spec: timeout_ms is at most 120 s. A run's calls never outlast it. */
export const MAX_RUN_TIMEOUT_MS = 120_000;

/**
 * After this long without a heartbeat the server declares a model call's worker dead and retries the
 * call on another. A worker sends a call's heartbeats every half of it (HEARTBEAT_INTERVAL_MS), and
 * each one that reaches the server is a request and a write of the run's state, and re-arms the
 * timeout's timer, another write: with hundreds of calls in flight those writes are most of
 * Temporal's cost (at 2 s, 600 calls made 375 heartbeats a second and pushed the start of new runs'
 * first tasks back by up to 10 s; at 10 s, 120). So a crash costs a call 10 s, and a cancel the API
 * did not announce reaches it within 5 s (an announced one at once: CANCEL_CONFIRM_FIRST_MS). 20 s
 * would halve those writes, for 3 % of a long run's CPU (docs/performance.md, "Tried and dropped").
 */
export const MODEL_HEARTBEAT_TIMEOUT_MS = 10_000;

/**
 * Cancellable activities heartbeat this often while they run, the first time one interval after
 * Temporal scheduled them (activities/bounded.ts says why): half a model call's heartbeat timeout
 * leaves the other half for a heartbeat to reach a loaded server (at 0.8 of it, the SDK's default, a
 * call was retried for a late heartbeat and reached its provider twice). A call shorter than one
 * interval sends none.
 */
export const HEARTBEAT_INTERVAL_MS = MODEL_HEARTBEAT_TIMEOUT_MS / 2;

/**
 * A call the API announced cancelled has stopped its provider and waits for Temporal's cancel, which
 * comes only with a heartbeat's answer once the run's workflow has asked for it (a workflow task after
 * the API's cancel, tens of milliseconds): the call asks at once, then after this and twice as long
 * each time, not at its next regular heartbeat (POST /runs/{id}/cancel of a streamed run answered in
 * 4.0 s at p50, now 0.14 s: the bench's `cancel answered`). A worker sends heartbeats no more often
 * than this (its throttle, workers/worker.ts); regular heartbeats are far apart, so it holds none of
 * them back.
 */
export const CANCEL_CONFIRM_FIRST_MS = 100;

/**
 * A streamed call sends a provider's chunk at once when none went in the last this-many ms, and
 * otherwise sends what came meanwhile as one delta at the end of that time: a real model's chunks come
 * 10-50 ms apart, and each delta is a stream entry, a notice, a read and an event-stream frame, in the
 * worker, Redis, the API and the client alike (activities/deltaWindow.ts). The first delta of a reply,
 * and every chunk of a slow one, go at once.
 */
export const DELTA_WINDOW_MS = 50;

/** The outbox dispatcher's pass heartbeats from its loop at most this often; its heartbeat timeout is twice it. */
export const DISPATCH_HEARTBEAT_INTERVAL_MS = 5_000;

/** A call stops itself at the run's deadline; the server's schedule-to-close, this much later, only stops a call whose worker died. */
export const DEADLINE_GRACE_MS = 5_000;

/** A tool's HTTP request gives up after this; each attempt's start-to-close is a little longer, so the request's own error is what the run sees. */
export const TOOL_REQUEST_TIMEOUT_MS = 10_000;
export const TOOL_ATTEMPT_TIMEOUT_MS = TOOL_REQUEST_TIMEOUT_MS + 5_000;

/**
 * The workflow's execution timeout is timeout_ms plus this: time to wait for a worker while queued
 * and to retry settlement through a database outage. A run still open after it is closed by Temporal
 * and then settled by the reconciler, so no run waits forever.
 */
export const RUN_EXECUTION_MARGIN_MS = 30 * 60_000;

/**
 * A queued turn looks whether it is next when a turn of its conversation ends (a signal), and this
 * often regardless, in case the signal was never sent (a turn whose run never started ends when the
 * reconciler gives its hold back, which also signals; a settlement that died before signalling).
 */
export const TURN_RECHECK_MS = 30_000;

/**
 * A queued turn waits at most this long for the turns before it, then fails (conversation_busy):
 * inside its workflow's execution margin, so it settles itself rather than being timed out.
 */
export const TURN_WAIT_LIMIT_MS = RUN_EXECUTION_MARGIN_MS - 5 * 60_000;

/**
 * A non-streamed request waits for its run at most timeout_ms plus this (queueing and bookkeeping);
 * after it the API answers 202 with the run as it stands, and the caller polls GET /runs/{id}.
 * Configurable with API_WAIT_GRACE_MS.
 */
export const API_WAIT_GRACE_MS = 30_000;

/**
 * On SIGTERM a worker stops polling and lets its in-flight activities finish for this long: the
 * longest call a run can make (timeout_ms at most, plus the deadline grace), so a deploy cancels no
 * model call. Configurable with WORKER_SHUTDOWN_GRACE_MS.
 */
export const WORKER_SHUTDOWN_GRACE_MS = MAX_RUN_TIMEOUT_MS + DEADLINE_GRACE_MS + 5_000;

/** The reconciler settles runs left open by a workflow that ended without settling, this often. */
export const RECONCILE_EVERY_MS = 60_000;
/** A run younger than this is not looked at: its workflow may just not have been described yet. */
export const RECONCILE_MIN_AGE_MS = 60_000;

/**
 * A webhook delivery held back by its partner's rate is told when its turn should come, and asks again
 * then, or after this at the most (so its estimate is refreshed as the queue ahead of it changes).
 */
export const MAX_HOLD_MS = 60_000;

/**
 * The outbox dispatcher's Schedule starts a run this often (each run lasts as long), whose activity
 * passes run this long each (heartbeating), looking for new events this often when idle: a pass is
 * short so that a worker's shutdown hands it over quickly, a run long enough to keep its history small.
 */
export const DISPATCH_EVERY_MS = 60_000;
export const DISPATCH_PASS_MS = 10_000;
export const DISPATCH_IDLE_POLL_MS = 100;

/**
 * A step that failed because PostgreSQL, Redis or Temporal could not be reached (a failover: 10 to
 * 60 s) waits and tries again, first after this, then twice as long each time up to
 * DEPENDENCY_RETRY_MAX_MS, within the run's deadline (activities/untilAvailable.ts). Short enough
 * that a run goes on within a few seconds of the dependency's return; long enough that a minute's
 * outage costs a step about twenty tries, not thousands.
 */
export const DEPENDENCY_RETRY_FIRST_MS = 250;
export const DEPENDENCY_RETRY_MAX_MS = 4_000;

/** The Retry-After of a 503 for a dependency's outage: about how long a restart takes, the 8 s ones measured included. */
export const DEPENDENCY_RETRY_AFTER_S = 5;
