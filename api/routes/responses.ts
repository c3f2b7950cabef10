import Router from '@koa/router';
import { invalidRequest } from '../../domain/errors';
import type { AppState } from '../state';
import { executionEndpoint } from './executionEndpoint';

/** POST /api/v2/responses: stateless execution of the agent named in the body. */
export function responsesRoutes(router: Router<AppState>): void {
  router.post(
    '/api/v2/responses',
    ...executionEndpoint({
      endpoint: 'responses',
      scope: 'responses:create',
      check(_ctx, request) {
        if (!request.agent) throw invalidRequest('agent is required.');
      },
      agent: (ctx) => ctx.state.execution?.agent,
      endUser: (ctx) => ctx.state.execution?.externalRef,
      target: async (_ctx, request) => ({ kind: 'response', agentPublicId: request.agent! }),
    }),
  );
}
