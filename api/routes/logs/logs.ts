import Router from '@koa/router';
import { logPage } from '../../../db/runLogs';
import { listPage } from '../listPage';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { ListLogs } from './schema';

/** GET /api/v2/logs: execution metadata of runs, newest first, never transcript content. */
export function logsRoutes(router: Router<AppState>): void {
  router.get<{ input: Input<typeof ListLogs> }>(
    '/api/v2/logs',
    validate(ListLogs),
    authorize({ scopes: ['logs:read'], endpoint: 'logs' }),
    async (ctx) => {
      const { limit, after } = ctx.state.input.query;
      const rows = await logPage(workspaceOf(ctx.state.principal).id, after, limit + 1);
      ctx.body = listPage(
        rows,
        limit,
        (l) => ({
          id: l.public_id,
          run: l.run,
          agent: l.agent,
          status: l.status,
          latency_ms: l.latency_ms,
          model: l.model,
          usage: { input_tokens: l.input_tokens, output_tokens: l.output_tokens, total_tokens: l.total_tokens, cached_tokens: l.cached_tokens },
          tool_names: l.tool_names,
          error_code: l.error_code,
          uncharged_credits: l.uncharged_credits,
          refused: l.refused,
          usage_estimated: l.usage_estimated,
          history_omitted: l.history_omitted,
          knowledge: l.knowledge,
          created_at: l.created_at.toISOString(),
        }),
        'next',
      );
    },
  );
}
