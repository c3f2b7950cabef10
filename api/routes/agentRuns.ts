import Router from '@koa/router';
import { invalidRequest } from '../../domain/errors';
import { execute } from '../execution';
import { scope } from '../middleware/auth';
import type { AppState } from '../state';
import { parseExecutionRequest } from '../validation/runtimeInput';

/**
 * POST /api/v2/agents/{agent_id}/runs: the agent from the URL on a structured payload plus a task
 * line; answers with the conversation, which `external_ref` resolves to the same one every time.
 */
export function agentRunsRoutes(router: Router<AppState>): void {
  router.post(
    '/api/v2/agents/:agent_id/runs',
    async (ctx, next) => {
      const request = parseExecutionRequest(ctx.request.body);
      if (request.agent !== undefined && request.agent !== ctx.params.agent_id) throw invalidRequest('agent is taken from the URL; a different agent in the body is refused.');
      ctx.state.execution = request;
      await next();
    },
    scope('agents:run'),
    async (ctx) => {
      await execute(ctx, ctx.state.execution!, { kind: 'agent_run', agentPublicId: ctx.params.agent_id });
    },
  );
}
