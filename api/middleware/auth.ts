import type { Middleware } from 'koa';
import { ServiceError } from '../../domain/errors';
import type { Scope } from '../../domain/scopes';
import { authenticate, requireScope } from '../credentials';
import type { AppState, Principal } from '../state';

/**
 * Authenticates the bearer credential and requires a scope: 401, then 403 naming it. Given several,
 * any one of them admits (run retrieval serves callers of either execution endpoint).
 */
export function scope(...accepted: [Scope, ...Scope[]]): Middleware<AppState> {
  return async (ctx, next) => {
    const principal = await authenticate(ctx.get('Authorization'));
    requireScope(principal, accepted);
    ctx.state.principal = principal;
    await next();
  };
}

/** The caller's workspace; partner credentials act on partner endpoints, not inside a workspace. */
export function workspaceOf(principal: Principal | undefined): NonNullable<Principal['workspace']> {
  if (!principal?.workspace) throw new ServiceError('permission_denied', 'This endpoint needs a workspace credential (tgcc_), not a partner credential.');
  return principal.workspace;
}
