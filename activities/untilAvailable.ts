import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { unavailableDependency } from '../infra/dependencyErrors';
import { dependencyRetried } from '../infra/dependencyOutages';
import { DEPENDENCY_RETRY_FIRST_MS, DEPENDENCY_RETRY_MAX_MS } from '../workflows/timings';

export const GAVE_UP = 'a dependency was unavailable until the run\'s deadline';

/**
 * Runs a step of bookkeeping (idempotent: a read, or a write that finds itself done) until it
 * succeeds, waiting out an outage of PostgreSQL or Redis with backoff, but never past `until` (the
 * run's deadline). Any other error is thrown at once, so a
 * provider's or a tool's failures keep the retry policy their activity declares. Only this step is
 * repeated, never the model call around it. The wait ends early if the activity is cancelled. An
 * outage that outlasts the deadline fails the run with service_unavailable, finally (a failure of
 * ours: not charged).
 */
export async function untilAvailable<T>(step: () => Promise<T>, until: number): Promise<T> {
  for (let wait = DEPENDENCY_RETRY_FIRST_MS; ; wait = Math.min(2 * wait, DEPENDENCY_RETRY_MAX_MS)) {
    try {
      return await step();
    } catch (err) {
      const dependency = unavailableDependency(err);
      if (!dependency) throw err;
      if (Date.now() + wait >= until) {
        log.warn(GAVE_UP, { dependency, error: String(err) });
        throw ApplicationFailure.create({ type: 'service_unavailable', message: `The service's ${dependency} was unavailable until the run's deadline.`, nonRetryable: true, cause: err as Error });
      }
      dependencyRetried(dependency);
      await Context.current().sleep(wait);
    }
  }
}
