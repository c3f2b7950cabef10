import type { Context, Middleware } from 'koa';
import { isInjection } from 'light-my-request';
import { ServiceError } from '../../domain/errors';
import type { Scope } from '../../domain/scopes';
import { addressRefusedFor, recordAuthFailure } from '../../callers/authFailures';
import { authenticate, requireScope } from './credentials';
import { CSRF_HEADER, SESSION_COOKIE, currentSession, requireCsrf, sessionPrincipal } from '../../callers/sessions';
import type { AppState } from './state';
import { workspaceOf, type Principal } from '../../callers/principal';
import { enforceRateLimit } from './rateLimit';

/** Reads change nothing and spend nothing: without Redis they are served uncounted (docs/api.md, "Rate limits"). */
const READS = new Set(['GET', 'HEAD']);

type Finder<S> = (ctx: Context & { state: S }) => string | undefined | Promise<string | undefined>;

export interface Authorization<S extends AppState> {
  /** Any one of them admits; `any`: every valid credential (an endpoint whose scope the spec leaves unstated). */
  scopes: readonly [Scope, ...Scope[]] | 'any';
  /**
   * Whose credential the endpoint serves: a workspace's (`tgcc_`, the default), a partner's (`tgpk_`,
   * the partner webhook paths), or either. The other kind is refused with 403.
   */
  credential?: 'workspace' | 'partner' | 'either';
  /** The endpoint's name in the tenant + endpoint rate-limit dimension, short snake_case. */
  endpoint: string;
  /** The agent the request names, before it is resolved; absent, the agent dimension is skipped. */
  agent?: Finder<S>;
  /** The end user the request names (the spec's "principal"); absent, that dimension is skipped. */
  endUser?: Finder<S>;
}

/**
 * The access declaration of every authenticated endpoint: authenticate (401), require a scope (403),
 * then count the call against the rate limits (429). Counting is part of admission, not a separate
 * declaration, so no route can authenticate a call without counting it against its credential and
 * workspace ("all calls with one key", "whole workspace, all surfaces"). A call refused at any step
 * is not counted.
 */
export function authorize<S extends AppState>(a: Authorization<S>): Middleware<S> {
  return async (ctx, next) => {
    const principal = await authenticateFrom(ctx.ip, ctx.get('Authorization') !== '' || ctx.cookies.get(SESSION_COOKIE) !== undefined, (throttled) => credentialOf(ctx, throttled));
    if (a.scopes !== 'any') requireScope(principal, a.scopes);
    ctx.state.principal = principal;
    ctx.state.endpoint = a.endpoint;
    const subject = {
      credential: principal.keyId,
      tenant: accountOf(principal, a.credential ?? 'workspace'),
      endpoint: a.endpoint,
      agent: await a.agent?.(ctx),
      endUser: await a.endUser?.(ctx),
    };
    await enforceRateLimit(subject, ctx.state.requestId, { failOpen: READS.has(ctx.method) });
    await next();
  };
}

/**
 * A bearer credential only (no session cookie): the MCP transport's, whose clients are not browsers.
 * `audience`: an OAuth access token is accepted only on the resource it was issued for.
 */
export function bearerPrincipal(ctx: Context, audience: 'api' | 'mcp'): Promise<Principal> {
  const authorization = ctx.get('Authorization');
  return authenticateFrom(ctx.ip, authorization !== '', (throttled) => authenticate(authorization, audience, { throttled }));
}

/**
 * The request's credential: a bearer key when one is sent, else a dashboard session cookie (whose
 * unsafe requests must also carry the session's CSRF token).
 */
async function credentialOf(ctx: Context, throttled: boolean): Promise<Principal> {
  const authorization = ctx.get('Authorization');
  // Only the MCP dispatcher injects requests (in process): its tool calls carry a token for /mcp.
  if (isInjection(ctx.req)) return authenticate(authorization, 'mcp', { throttled });
  if (authorization !== '' || !ctx.cookies.get(SESSION_COOKIE)) return authenticate(authorization, 'api', { throttled });
  const session = await currentSession(ctx);
  if (!session) throw new ServiceError('authentication_error', 'The dashboard session has ended or is unknown: sign in again.');
  requireCsrf(ctx, session, ctx.get(CSRF_HEADER) || undefined);
  return sessionPrincipal(session);
}

/**
 * Authenticates, counting this failure against the client address if it fails. An address that
 * failed too often is still served for every credential that resolves (a live key, on any instance,
 * however new; a live session): customers behind one NAT or proxy are not locked out by whoever
 * shares it. A credential from it that cannot resolve (a key the filter of live keys rules out) is
 * refused 429 without a lookup. A request that presents no credential is 401 from anywhere, as the
 * spec says: it guesses nothing and costs no lookup, so the lockout has nothing to refuse.
 */
async function authenticateFrom(address: string, sent: boolean, resolve: (throttled: boolean) => Promise<Principal>): Promise<Principal> {
  const wait = sent ? addressRefusedFor(address) : undefined;
  try {
    return await resolve(wait !== undefined);
  } catch (err) {
    if (wait !== undefined) throw new ServiceError('rate_limited', 'Too many failed authentications from this address; retry after the window ends.', { 'Retry-After': String(wait) });
    // A credential that does not resolve is a guess; a request that sent none is not probing anything.
    if (err instanceof ServiceError && err.code === 'authentication_error' && sent) await recordAuthFailure(address);
    throw err;
  }
}

/** The account whose allowance the call spends: the workspace, or the partner. */
function accountOf(principal: Principal, credential: 'workspace' | 'partner' | 'either'): string {
  if (credential === 'workspace') return workspaceOf(principal).publicId;
  if (credential === 'partner') return partnerOf(principal).publicId;
  return principal.workspace?.publicId ?? partnerOf(principal).publicId;
}

/** The caller's partner; a workspace key never reaches a partner's endpoints, deliveries or secrets. */
export function partnerOf(principal: Principal | undefined): NonNullable<Principal['partner']> {
  if (!principal?.partner || principal.kind !== 'partner') throw new ServiceError('permission_denied', 'This endpoint needs a partner credential (tgpk_), not a workspace credential.');
  return principal.partner;
}

