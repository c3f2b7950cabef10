import type Router from '@koa/router';
import { ValidationError } from 'yup';
import { ServiceError } from '../../../domain/errors';
import { ROLE_SCOPES } from '../../../domain/members';
import { AdminError, createWorkspaceKey, revokeKey } from '../../../admin/commands';
import { findWorkspaceKey, workspaceKeys } from '../../../db/apiKeys';
import { forgetCredentials } from '../../middleware/credentials';
import { memberPage, render, type PageContext, type PageState } from '../page';

async function keysPage(ctx: PageContext, extra: Record<string, unknown> = {}, status = 200): Promise<void> {
  const { session } = ctx.state;
  const keys = await workspaceKeys(session.workspace.id);
  render(ctx, 'keys', { title: 'API keys', nav: 'keys', keys, grantable: ROLE_SCOPES[session.member.role], now: new Date(), ...extra }, status);
}

/**
 * Keys: mint one with scopes picked from the registry (no wider than the member's own), shown once;
 * list them with last use and expiry; revoke one. Minting and revoking are the admin CLI's own code.
 */
export function keyPages(router: Router<PageState>): void {
  router.get('/dashboard/keys', memberPage('keys:read'), (ctx) => keysPage(ctx));

  router.post('/dashboard/keys', memberPage('keys:write'), async (ctx) => {
    const { form, session } = ctx.state;
    const scopes = form.getAll('scopes');
    const grantable: readonly string[] = ROLE_SCOPES[session.member.role];
    const beyond = scopes.filter((s) => !grantable.includes(s));
    const expires = form.get('expires_on') || undefined;
    let problem = scopes.length === 0 ? 'Pick at least one scope.' : beyond.length ? `Not a scope your role can grant: ${beyond.join(', ')}.` : undefined;
    if (!problem && expires && !(new Date(`${expires}T23:59:59Z`).getTime() > Date.now())) problem = 'The expiry date must be in the future.';
    if (problem) return keysPage(ctx, { error: problem }, 400);
    try {
      const minted = await createWorkspaceKey({
        workspace: session.workspace.publicId,
        scopes: scopes.join(','),
        environment: form.get('environment') ?? 'live',
        expiresAt: expires ? `${expires}T23:59:59Z` : undefined,
        name: form.get('name')?.trim() || undefined,
      });
      await keysPage(ctx, { minted }, 201);
    } catch (err) {
      if (err instanceof AdminError || err instanceof ValidationError) return keysPage(ctx, { error: err.message }, 400);
      throw err;
    }
  });

  router.post('/dashboard/keys/:id/revoke', memberPage('keys:write'), async (ctx) => {
    // Another workspace's key is as absent as a made-up one.
    if (!(await findWorkspaceKey(ctx.state.session.workspace.id, ctx.params.id))) throw new ServiceError('key_not_found', 'No such key in this workspace.');
    await revokeKey({ id: ctx.params.id });
    // At once on this instance; the others' credential caches hold it at most CREDENTIAL_CACHE_MS.
    forgetCredentials();
    ctx.redirect('/dashboard/keys');
  });
}
