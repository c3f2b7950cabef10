import type { ParsedUrlQuery } from 'node:querystring';
import type { RunFilters } from '../../db/runs';

/** The Runs page's views: every run, or the runs that need attention (GET /api/v2/runs' filters). */
export const RUN_VIEWS = {
  all: 'All runs',
  failed: 'Failed or blocked',
  queued: 'Waited in the queue',
  reconciled: 'Settled by the reconciler',
} as const;
export type RunView = keyof typeof RUN_VIEWS;

const DEFAULT_WAIT_S = 30;
const MAX_WAIT_S = 86_400;

export interface RunFilterState {
  view: RunView;
  /** The queue-wait threshold of the `queued` view, in seconds. */
  waitedS: number;
  filters: RunFilters;
  /** What the pager's links and form carry along, so paging keeps the view. */
  params: [string, string][];
}

/** The filter a Runs page's query asks for; anything unknown shows every run (as an unknown page size shows the default). */
export function runFilterState(query: ParsedUrlQuery): RunFilterState {
  const view = typeof query.view === 'string' && Object.hasOwn(RUN_VIEWS, query.view) ? (query.view as RunView) : 'all';
  const asked = typeof query.waited_s === 'string' && /^[0-9]{1,6}$/.test(query.waited_s) ? Number(query.waited_s) : DEFAULT_WAIT_S;
  const waitedS = Math.min(asked, MAX_WAIT_S);
  const filters: RunFilters = {
    all: {},
    failed: { statuses: ['failed', 'blocked'] },
    queued: { queuedLongerThanMs: waitedS * 1000 },
    reconciled: { reconciled: true },
  }[view];
  const params: [string, string][] = view === 'all' ? [] : view === 'queued' ? [['view', view], ['waited_s', String(waitedS)]] : [['view', view]];
  return { view, waitedS, filters, params };
}
