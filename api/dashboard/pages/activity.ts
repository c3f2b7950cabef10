import type { ParsedUrlQuery } from 'node:querystring';
import type Router from '@koa/router';
import { decodeCursor } from '../../../domain/cursor';
import { listPage } from '../../routes/listPage';
import type { IdKind } from '../../../domain/ids';
import { conversationPage } from '../../../db/conversations';
import { logPage } from '../../../db/runLogs';
import { runPage, type RunFilters } from '../../../db/runs';
import type { Scope } from '../../../domain/scopes';
import { memberPage, render, type PageState } from '../page';
import { RUN_VIEWS, runFilterState } from '../runFilters';

const LIMITS = [25, 50, 100];

interface Listing {
  path: string;
  view: string;
  title: string;
  scope: Scope;
  kind: IdKind;
  /** A page of rows, and where a scan bound stopped it short (runs: db/runs.ts). */
  page: (workspaceId: number, after: string | undefined, limit: number, filters: RunFilters) => Promise<{ rows: { public_id: string }[]; scannedTo?: string } | undefined>;
  /** The page's filter read from its query: what the rows are filtered by, what the view shows of it, and what the pager carries along. */
  filter?: (query: ParsedUrlQuery) => Filter;
}

interface Filter {
  filters: RunFilters;
  view: Record<string, unknown>;
  params: [string, string][];
}

const rowsOf = <R>(rows: R[] | undefined) => rows && { rows };

const NO_FILTER: Filter = { filters: {}, view: {}, params: [] };

// Metadata only: each page lists what its table holds about a run or a conversation, never content.
const LISTINGS: Listing[] = [
  { path: '/dashboard/logs', view: 'logs', title: 'Logs', scope: 'logs:read', kind: 'log', page: async (w, after, limit) => rowsOf(await logPage(w, after, limit)) },
  {
    path: '/dashboard/runs',
    view: 'runs',
    title: 'Runs',
    scope: 'agents:read',
    kind: 'run',
    // The runs that need attention: the filters of GET /api/v2/runs.
    page: (w, after, limit, filters) => runPage(w, after, limit, filters),
    filter: (query) => {
      const { view, waitedS, filters, params } = runFilterState(query);
      return { filters, view: { views: RUN_VIEWS, view, waitedS }, params };
    },
  },
  { path: '/dashboard/conversations', view: 'conversations', title: 'Conversations', scope: 'conversations:read', kind: 'conversation', page: async (w, after, limit) => rowsOf(await conversationPage(w, after, limit)) },
];

/** Logs, runs and conversations: newest first, with /logs' paging (a page size and an opaque cursor). */
export function activityPages(router: Router<PageState>): void {
  for (const listing of LISTINGS) {
    router.get(listing.path, memberPage(listing.scope), async (ctx) => {
      const limit = LIMITS.includes(Number(ctx.query.limit)) ? Number(ctx.query.limit) : LIMITS[0];
      const cursor = typeof ctx.query.cursor === 'string' && ctx.query.cursor !== '' ? ctx.query.cursor : undefined;
      const filter = listing.filter?.(ctx.query) ?? NO_FILTER;
      const found = await listing.page(ctx.state.session.workspace.id, cursor && decodeCursor(cursor, listing.kind), limit + 1, filter.filters);
      // The API's own paging: the same cursor, refused the same way when it is not this workspace's.
      const page = listPage(found?.rows, limit, (row) => row, 'next_cursor', found?.scannedTo);
      const carried = filter.params.map(([name, value]) => `&${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('');
      render(ctx, listing.view, { title: listing.title, nav: listing.view, rows: page.data, limit, limits: LIMITS, next: page.next_cursor, first: cursor === undefined, params: filter.params, carried, ...filter.view });
    });
  }
}
