import Router from '@koa/router';
import { execute } from '../../execution';
import { authorize } from '../../middleware/auth';
import { idempotent } from '../../middleware/idempotent';
import { validate, type Input } from '../../middleware/validate';
import type { AppState } from '../../state';
import { CreateAgentRun, sameAgent } from './schema';

/**
 * POST /api/v2/agents/{agent_id}/runs: the agent from the URL on a structured payload plus a task
 * line; answers with the conversation, which `external_ref` resolves to the same one every time.
 */
export function agentsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateAgentRun> }>(
    '/api/v2/agents/:agent_id/runs',
    validate(CreateAgentRun, sameAgent),
    authorize({ scopes: ['agents:run'], endpoint: 'agent_runs', agent: (ctx) => ctx.state.input.params.agent_id, endUser: (ctx) => ctx.state.input.body.externalRef }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { params, body } = ctx.state.input;
      await execute(ctx, body, { kind: 'agent_run', agentPublicId: params.agent_id });
    },
  );
}
