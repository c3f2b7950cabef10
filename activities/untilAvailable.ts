import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { unavailableDependency } from '../infra/dependencyErrors';
import { dependencyRetried } from '../infra/dependencyOutages';
import { DEPENDENCY_RETRY_FIRST_MS, DEPENDENCY_RETRY_MAX_MS } from '../domain/timings';

export const GAVE_UP = 'gave up waiting for a dependency: its outage outlasted the deadline';

/**
 * Runs a step of bookkeeping (idempotent: a read, or a write that finds itself done) until it
 * succeeds, waiting out an outage of PostgreSQL or Redis with backoff. Any other error is thrown at
 * once, so a provider's or a tool's failures keep the retry policy their activity declares. Only this
 * step is repeated, never the remote call around it. The wait ends early if the activity is cancelled.
 *
 * It waits until `runDeadline` when given: an outage that outlasts a run's deadline fails the run
 * with service_unavailable, finally (a failure of ours: not charged). Otherwise it waits until this
 * attempt would time out, and then throws the step's error for the activity's retry policy.
 */
export async function untilAvailable<T>(step: () => Promise<T>, runDeadline?: number): Promise<T> {
  const until = runDeadline ?? attemptDeadline();
  for (let wait = DEPENDENCY_RETRY_FIRST_MS; ; wait = Math.min(2 * wait, DEPENDENCY_RETRY_MAX_MS)) {
    try {
      return await step();
    } catch (err) {
      const dependency = unavailableDependency(err);
      if (!dependency) throw err;
      if (Date.now() + wait >= until) {
        log.warn(GAVE_UP, { dependency, error: String(err) });
        if (runDeadline === undefined) throw err;
        throw ApplicationFailure.create({ type: 'service_unavailable', message: `The service's ${dependency} was unavailable until the run's deadline.`, nonRetryable: true, cause: err as Error });
      }
      dependencyRetried(dependency);
      await Context.current().sleep(wait);
    }
  }
}

/** Stop waiting this long before the attempt would be timed out, so the step's last error is the one reported. */
const DEADLINE_MARGIN_MS = 1_000;

/** When this activity attempt must have ended, by its start-to-close and schedule-to-close timeouts (0: none), less a margin. */
function attemptDeadline(): number {
  const info = Context.current().info;
  const ends = [
    info.startToCloseTimeoutMs > 0 ? info.currentAttemptScheduledTimestampMs + info.startToCloseTimeoutMs : Infinity,
    info.scheduleToCloseTimeoutMs > 0 ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : Infinity,
  ];
  return Math.min(...ends) - DEADLINE_MARGIN_MS;
}
