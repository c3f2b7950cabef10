import type { Context, Middleware } from 'koa';
import { ServiceError } from '../../domain/errors';
import type { Scope } from '../../domain/scopes';
import { authenticate, requireScope } from '../credentials';
import type { AppState, Principal } from '../state';
import { enforceRateLimit } from './rateLimit';

/** Reads change nothing and spend nothing: without Redis they are served uncounted (README, "Rate limits"). */
const READS = new Set(['GET', 'HEAD']);

type Finder = (ctx: Context & { state: AppState }) => string | undefined | Promise<string | undefined>;

export interface Authorization {
  /** Any one of them admits. */
  scopes: readonly [Scope, ...Scope[]];
  /** The endpoint's name in the tenant + endpoint rate-limit dimension, short snake_case. */
  endpoint: string;
  /** The agent the request names, before it is resolved; absent, the agent dimension is skipped. */
  agent?: Finder;
  /** The end user the request names (the spec's "principal"); absent, that dimension is skipped. */
  endUser?: Finder;
}

/**
 * The access declaration of every authenticated endpoint: authenticate (401), require a scope (403),
 * then count the call against the rate limits (429). Counting is part of admission, not a separate
 * declaration, so no route can authenticate a call without counting it against its credential and
 * workspace ("all calls with one key", "whole workspace, all surfaces"). A call refused at any step
 * is not counted.
 */
export function authorize(a: Authorization): Middleware<AppState> {
  const admit = scope(...a.scopes);
  return (ctx, next) =>
    admit(ctx, async () => {
      const principal = ctx.state.principal!;
      const subject = {
        credential: principal.keyId,
        tenant: workspaceOf(principal).publicId,
        endpoint: a.endpoint,
        agent: await a.agent?.(ctx),
        endUser: await a.endUser?.(ctx),
      };
      await enforceRateLimit(subject, ctx.state.requestId, { failOpen: READS.has(ctx.method) });
      await next();
    });
}

/** Authenticates the bearer credential and requires one of the scopes: 401, then 403 naming them. */
function scope(...accepted: [Scope, ...Scope[]]): Middleware<AppState> {
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
