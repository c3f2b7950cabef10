import Router from '@koa/router';
import { secretDeleted, secretList, secretObject } from '../../../domain/secrets';
import { deleteSecret, listSecrets, putSecret } from '../../../db/workspaceSecrets';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { DeleteSecret, PutSecret } from './schema';

/**
 * Workspace secrets (beyond the spec): credentials agents' tools use, named in agent config by
 * `credential`. Set and deleted by name; listed by name. No answer, log line or error carries a value.
 */
export function secretsRoutes(router: Router<AppState>): void {
  router.put<{ input: Input<typeof PutSecret> }>(
    '/api/v2/secrets/:name',
    validate(PutSecret),
    authorize({ scopes: ['secrets:write'], endpoint: 'secrets_put' }),
    async (ctx) => {
      const { params, body } = ctx.state.input;
      ctx.body = secretObject(await putSecret(workspaceOf(ctx.state.principal).id, params.name, body.value, body.origin));
    },
  );

  router.get('/api/v2/secrets', authorize({ scopes: ['secrets:read'], endpoint: 'secrets_list' }), async (ctx) => {
    const secrets = await listSecrets(workspaceOf(ctx.state.principal).id);
    ctx.body = secretList(secrets);
  });

  router.delete<{ input: Input<typeof DeleteSecret> }>(
    '/api/v2/secrets/:name',
    validate(DeleteSecret),
    authorize({ scopes: ['secrets:write'], endpoint: 'secrets_delete' }),
    async (ctx) => {
      // Another workspace's secret is as absent as a missing one: every lookup is by this workspace.
      const { name } = ctx.state.input.params;
      if (!(await deleteSecret(workspaceOf(ctx.state.principal).id, name))) throw notFound('secret_not_found');
      ctx.body = secretDeleted(name);
    },
  );
}
