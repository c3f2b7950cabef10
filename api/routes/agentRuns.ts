import Router from '@koa/router';
import { invalidRequest } from '../../domain/errors';
import type { AppState } from '../state';
import { executionEndpoint } from './executionEndpoint';

/**
 * POST /api/v2/agents/{agent_id}/runs: the agent from the URL on a structured payload plus a task
 * line; answers with the conversation, which `external_ref` resolves to the same one every time.
 */
export function agentRunsRoutes(router: Router<AppState>): void {
  router.post(
    '/api/v2/agents/:agent_id/runs',
    ...executionEndpoint({
      endpoint: 'agent_runs',
      scope: 'agents:run',
      check(ctx, request) {
        if (request.agent !== undefined && request.agent !== ctx.params.agent_id) throw invalidRequest('agent is taken from the URL; a different agent in the body is refused.');
      },
      agent: (ctx) => ctx.params.agent_id,
      endUser: (ctx) => ctx.state.execution?.externalRef,
      target: async (ctx) => ({ kind: 'agent_run', agentPublicId: ctx.params.agent_id }),
    }),
  );
}
