import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { ServiceError } from '../domain/errors';
import { ROLE_SCOPES, SESSION_TTL_MS, secretToken, tokenHash } from '../domain/members';
import { endSession, findLiveSession, insertSession, type SessionRecord } from '../db/dashboardSessions';
import { config } from '../infra/config';
import { memberPrincipal } from './memberPrincipal';
import type { Principal } from './principal';

/** The dashboard session cookie; the spec's "dashboard session" security scheme. */
export const SESSION_COOKIE = 'aes_session';
/** A session's unsafe requests carry its CSRF token in this header (API) or a form field (dashboard pages). */
export const CSRF_HEADER = 'X-CSRF-Token';
export const CSRF_FIELD = '_csrf';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The signed-in session the request's cookie names, if it is live. */
export async function currentSession(ctx: Context): Promise<SessionRecord | undefined> {
  const token = ctx.cookies.get(SESSION_COOKIE);
  return token ? findLiveSession(tokenHash(token)) : undefined;
}

/** Starts a session for the member: only the cookie holds its token, the database its hash. */
export async function startSession(ctx: Context, memberId: number): Promise<void> {
  const token = secretToken();
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await insertSession({ tokenHash: tokenHash(token), memberId, csrfToken: secretToken(), expiresAt });
  setCookie(ctx, token, expiresAt);
}

export async function finishSession(ctx: Context): Promise<void> {
  const token = ctx.cookies.get(SESSION_COOKIE);
  if (token) await endSession(tokenHash(token));
  setCookie(ctx, '', new Date(0));
}

/** Whether the dashboard's cookies are Secure: over HTTPS, directly or (PUBLIC_BASE_URL https) behind a proxy. */
export function secureCookies(ctx: Context): boolean {
  const secure = ctx.secure || config().publicBaseUrl.startsWith('https:');
  // Koa refuses a Secure cookie on a request it sees as plain HTTP (TLS ended at a proxy): the service knows better.
  ctx.cookies.secure = secure;
  return secure;
}

/**
 * HttpOnly (scripts never read it), SameSite=Lax (no cross-site POST carries it), Secure whenever the
 * service is reached over HTTPS, directly or as PUBLIC_BASE_URL says behind a proxy.
 */
function setCookie(ctx: Context, value: string, expires: Date): void {
  const secure = secureCookies(ctx);
  ctx.cookies.set(SESSION_COOKIE, value, { httpOnly: true, sameSite: 'lax', secure, path: '/', expires, overwrite: true });
}

/** A session's unsafe request must echo its CSRF token; a cookie alone is what a forged request would have. */
export function requireCsrf(ctx: Context, session: SessionRecord, sent: string | undefined): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  const expected = Buffer.from(session.csrfToken);
  const given = Buffer.from(sent ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ServiceError('permission_denied', `A dashboard session's ${ctx.method} request must send its CSRF token in the ${CSRF_HEADER} header.`);
  }
}

/** A member's session on the API: the workspace's, with the scopes the member's role grants. */
export function sessionPrincipal(session: SessionRecord): Principal {
  const { member, workspace } = session;
  return memberPrincipal(member, { id: workspace.id, publicId: workspace.publicId, tenantRef: workspace.tenantRef, partnerPublicId: workspace.partnerPublicId }, ROLE_SCOPES[member.role], null);
}
