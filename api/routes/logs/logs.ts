import Router from '@koa/router';
import { logPage } from '../../../db/runLogs';
import { logEntryObject } from '../../../domain/logEntry';
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
      ctx.body = listPage(rows, limit, logEntryObject, 'next');
    },
  );
}
