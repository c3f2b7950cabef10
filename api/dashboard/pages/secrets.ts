import type Router from '@koa/router';
import { ServiceError } from '../../../domain/errors';
import { isSecretName, isSecretOrigin, isSecretValue, SECRET_NAME_MESSAGE, SECRET_ORIGIN_MESSAGE, SECRET_VALUE_MESSAGE, MAX_SECRET_BYTES } from '../../../domain/secrets';
import { deleteSecret, listSecrets, putSecret } from '../../../db/workspaceSecrets';
import { can, memberPage, render, type PageContext, type PageState } from '../page';

async function secretsPage(ctx: PageContext, extra: Record<string, unknown> = {}, status = 200): Promise<void> {
  const { session } = ctx.state;
  const secrets = await listSecrets(session.workspace.id);
  render(ctx, 'secrets', { title: 'Secrets', nav: 'secrets', secrets, canWrite: can(session, 'secrets:write'), maxBytes: MAX_SECRET_BYTES, ...extra }, status);
}

/**
 * Secrets: the credentials agents' tools use (named in agent config by `credential`), listed by name;
 * set or replace one, delete one. A value is never shown, not even back in a refused form.
 */
export function secretPages(router: Router<PageState>): void {
  router.get('/dashboard/secrets', memberPage('secrets:read'), (ctx) => secretsPage(ctx));

  router.post('/dashboard/secrets', memberPage('secrets:write'), async (ctx) => {
    const { form, session } = ctx.state;
    const name = (form.get('name') ?? '').trim();
    const value = form.get('value') ?? '';
    const origin = (form.get('origin') ?? '').trim();
    const problem = !isSecretName(name)
      ? `The ${SECRET_NAME_MESSAGE}.`
      : !isSecretValue(value)
        ? `The ${SECRET_VALUE_MESSAGE}.`
        : !isSecretOrigin(origin)
          ? `The ${SECRET_ORIGIN_MESSAGE}.`
          : undefined;
    if (problem) return secretsPage(ctx, { error: problem, name }, 400);
    try {
      await putSecret(session.workspace.id, name, value, origin);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'secret_limit_reached') return secretsPage(ctx, { error: err.message, name }, 409);
      throw err;
    }
    await secretsPage(ctx, { notice: `Secret ${name} set.` });
  });

  // The name travels in the form, not the path: a name like ".." would not survive a browser's URL.
  router.post('/dashboard/secrets/delete', memberPage('secrets:write'), async (ctx) => {
    const name = ctx.state.form.get('name') ?? '';
    if (!(await deleteSecret(ctx.state.session.workspace.id, name))) throw new ServiceError('secret_not_found', 'No such secret in this workspace.');
    ctx.redirect('/dashboard/secrets');
  });
}
