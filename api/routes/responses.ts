import Router from '@koa/router';
import { invalidRequest } from '../../domain/errors';
import { execute } from '../execution';
import { scope } from '../middleware/auth';
import { idempotent } from '../middleware/idempotent';
import { rateLimit } from '../middleware/rateLimit';
import type { AppState } from '../state';
import { parseExecutionRequest } from '../validation/runtimeInput';

/** POST /api/v2/responses: stateless execution of the agent named in the body. */
export function responsesRoutes(router: Router<AppState>): void {
  router.post(
    '/api/v2/responses',
    async (ctx, next) => {
      const request = parseExecutionRequest(ctx.request.body);
      if (!request.agent) throw invalidRequest('agent is required.');
      ctx.state.execution = request;
      await next();
    },
    scope('responses:create'),
    rateLimit({ endpoint: 'responses', agent: (ctx) => ctx.state.execution?.agent, endUser: (ctx) => ctx.state.execution?.externalRef }),
    idempotent({ endpoint: 'responses', marker: 'Idempotency-Replayed' }),
    async (ctx) => {
      const request = ctx.state.execution!;
      await execute(ctx, request, { kind: 'response', agentPublicId: request.agent! });
    },
  );
}
