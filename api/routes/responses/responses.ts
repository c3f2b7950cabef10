import Router from '@koa/router';
import { execute } from '../../execution/execution';
import { authorize } from '../../middleware/auth';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { CreateResponse } from './schema';

/** POST /api/v2/responses: stateless execution of the agent named in the body. */
export function responsesRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateResponse> }>(
    '/api/v2/responses',
    validate(CreateResponse),
    authorize({ scopes: ['responses:create'], endpoint: 'responses', agent: (ctx) => ctx.state.input.body.agent, endUser: (ctx) => ctx.state.input.body.externalRef }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      await execute(ctx, body, { kind: 'response', agentPublicId: body.agent });
    },
  );
}
