import type Router from '@koa/router';
import { creditsByDay } from '../../../db/ledgerLines';
import { workspaceBalance } from '../../../db/workspaces';
import { usageChart } from '../usageChart';
import { memberPage, render, type PageState } from '../page';

const CHART_DAYS = 30;

/** Usage and balance: the credit balance, and credits billed per day and per channel over a month. */
export function usagePages(router: Router<PageState>): void {
  router.get('/dashboard', memberPage(), (ctx) => ctx.redirect('/dashboard/usage'));

  router.get('/dashboard/usage', memberPage('usage:read'), async (ctx) => {
    const workspace = ctx.state.session.workspace;
    const [balance, rows] = await Promise.all([workspaceBalance(workspace.id), creditsByDay(workspace.id, CHART_DAYS)]);
    render(ctx, 'usage', { title: 'Usage', nav: 'usage', balance, rows, chart: usageChart(rows, CHART_DAYS), days: CHART_DAYS });
  });
}
