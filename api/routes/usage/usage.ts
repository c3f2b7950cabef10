import Router from '@koa/router';
import { creditsByDay } from '../../../db/ledgerLines';
import { workspaceBalance } from '../../../db/workspaces';
import { usageReport } from '../../../domain/usageReport';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { ReadUsage } from './schema';

/**
 * GET /api/v2/usage: the credit balance and the credits billed per UTC day and channel (ledger line)
 * over the last `days` days; the dashboard's usage page reads the same two queries.
 */
export function usageRoutes(router: Router<AppState>): void {
  router.get<{ input: Input<typeof ReadUsage> }>('/api/v2/usage', validate(ReadUsage), authorize({ scopes: ['usage:read'], endpoint: 'usage' }), async (ctx) => {
    const workspace = workspaceOf(ctx.state.principal);
    const { days } = ctx.state.input.query;
    const [balance, rows] = await Promise.all([workspaceBalance(workspace.id), creditsByDay(workspace.id, days)]);
    ctx.body = usageReport(balance, days, rows);
  });
}
