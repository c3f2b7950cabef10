import { proxyActivities, proxyLocalActivities, type ActivityInterfaceFor, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities';
import { unsealed } from './summaries';

type Activities = typeof activities;

/**
 * Activities that share their options (timeouts, retries) but each say which step they are in the
 * Temporal UI (their summary), as `proxyActivities` with one summary per activity would.
 */
export function namedActivities<K extends keyof Activities>(options: ActivityOptions, summaries: Record<K, string>): Pick<ActivityInterfaceFor<Activities>, K> {
  const named = Object.entries<string>(summaries).map(([name, summary]) => [name, proxyActivities<Activities>({ ...options, summary: unsealed(summary) })[name as K]]);
  return Object.fromEntries(named) as Pick<ActivityInterfaceFor<Activities>, K>;
}

/** The same for local activities (a run's bookkeeping beside its workflow task). */
export function namedLocalActivities<K extends keyof Activities>(options: LocalActivityOptions, summaries: Record<K, string>): Pick<ActivityInterfaceFor<Activities>, K> {
  const named = Object.entries<string>(summaries).map(([name, summary]) => [name, proxyLocalActivities<Activities>({ ...options, summary: unsealed(summary) })[name as K]]);
  return Object.fromEntries(named) as Pick<ActivityInterfaceFor<Activities>, K>;
}
