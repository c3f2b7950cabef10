import type Router from '@koa/router';
import { runDetail } from '../../../db/runs';
import { config } from '../../../infra/config';
import { notFound } from '../../../callers/tenancy';
import { memberPage, render, type PageState } from '../page';
import { runTimeline, stoppedBy } from '../runTimeline';

/**
 * A run's page, linked from the Runs list: its status, kind, agent, credits and error code from its
 * records, and its steps with their times from its workflow history (api/dashboard/runTimeline.ts).
 * Never any text of the exchange. Owners also get the run's workflow in the Temporal UI, where one is
 * configured (TEMPORAL_UI_URL).
 */
export function runPages(router: Router<PageState>): void {
  router.get('/dashboard/runs/:run_id', memberPage('agents:read'), async (ctx) => {
    const run = await runDetail(ctx.state.session.workspace.id, ctx.params.run_id);
    if (!run) throw notFound('run_not_found');
    const { temporalUiUrl, temporalNamespace } = config();
    const temporalLink = temporalUiUrl && ctx.state.session.member.role === 'owner' ? `${temporalUiUrl}/namespaces/${encodeURIComponent(temporalNamespace)}/workflows/${encodeURIComponent(run.public_id)}` : undefined;
    render(ctx, 'run', { title: `Run ${run.public_id}`, nav: 'runs', run, timeline: await runTimeline(run.public_id), stoppedBy: stoppedBy(run.incomplete_reason), temporalLink });
  });
}
