import { proxyActivities, proxyLocalActivities, type ActivityInterfaceFor, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities';
import { unsealed } from '../workflowClients/summaries';

type Activities = typeof activities;
type Named<K extends keyof Activities> = Pick<ActivityInterfaceFor<Activities>, K>;
type Call = (...args: unknown[]) => Promise<unknown>;

/**
 * Each activity's proxy is made at its first call, not when its module loads: every workflow module is
 * loaded again for each workflow (the reusable V8 context keeps module state per workflow), so a run
 * would otherwise build the summaries of every workflow's activities (docs/performance.md, "Where a run's CPU goes").
 */
function named<K extends keyof Activities>(proxy: (summary: string) => Named<K>, summaries: Record<K, string>): Named<K> {
  return Object.fromEntries(
    Object.entries<string>(summaries).map(([name, summary]) => {
      let made: Call | undefined;
      return [name, (...args: unknown[]) => (made ??= proxy(summary)[name as K] as Call)(...args)];
    }),
  ) as Named<K>;
}

/**
 * Activities that share their options (timeouts, retries) but each say which step they are in the
 * Temporal UI (their summary), as `proxyActivities` with one summary per activity would.
 */
export function namedActivities<K extends keyof Activities>(options: ActivityOptions, summaries: Record<K, string>): Named<K> {
  return named((summary) => proxyActivities<Activities>({ ...options, summary: unsealed(summary) }), summaries);
}

/** The same for local activities (a run's bookkeeping beside its workflow task). */
export function namedLocalActivities<K extends keyof Activities>(options: LocalActivityOptions, summaries: Record<K, string>): Named<K> {
  return named((summary) => proxyLocalActivities<Activities>({ ...options, summary: unsealed(summary) }), summaries);
}
