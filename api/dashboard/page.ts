import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';
import { Eta } from 'eta';
import { ServiceError } from '../../domain/errors';
import { ROLE_SCOPES } from '../../domain/members';
import type { Scope } from '../../domain/scopes';
import type { SessionRecord } from '../../db/dashboardSessions';
import { logger } from '../../infra/logger';
import { PROJECT_ROOT } from '../../infra/projectRoot';
import { CSRF_FIELD, currentSession, requireCsrf } from '../../callers/sessions';
import { readBody } from '../middleware/readBody';
import type { AppState } from '../middleware/state';
import { dependencyFailure } from '../middleware/errorEnvelope';

/** A dashboard page's state: the signed-in session, and the posted form of a POST. */
export interface PageState extends AppState {
  session: SessionRecord;
  form: URLSearchParams;
}
export type PageContext = Context & { state: PageState };

// Views are read from the source tree (the build compiles TypeScript only); compiled once each.
const eta = new Eta({ views: path.join(PROJECT_ROOT, 'api/dashboard/views'), cache: true });

// No script runs on these pages, none may be injected, and no other site may frame or post into them.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Renders a view inside the layout; `session` puts the navigation and sign-out form around it. */
export function render(ctx: Context, view: string, data: Record<string, unknown> = {}, status = 200): void {
  const session = (ctx.state as Partial<PageState>).session;
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set({ 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store' });
  ctx.body = eta.render(view, { ...data, session, csrfField: CSRF_FIELD, path: ctx.path });
}

/** What a member may do: the scopes their role grants (the same ones their session carries on the API). */
export function can(session: SessionRecord, scope: Scope): boolean {
  return ROLE_SCOPES[session.member.role].includes(scope);
}

const MAX_FORM_BYTES = 64 * 1024;

/** A posted `application/x-www-form-urlencoded` form (the dashboard works without JavaScript). */
export async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new ServiceError('invalid_request', 'Forms are posted as application/x-www-form-urlencoded.');
  const raw = await readBody(ctx.req, MAX_FORM_BYTES);
  if (raw === 'tooLarge') throw new ServiceError('invalid_request', `A form is at most ${MAX_FORM_BYTES} bytes.`);
  return new URLSearchParams(raw.toString('utf8'));
}

/**
 * A page for signed-in members: without a live session, sign in first (and come back); a POST must
 * carry the session's CSRF token; `needs` is the scope the page's action takes.
 */
export function memberPage(needs?: Scope): Middleware<PageState> {
  return async (ctx, next) => {
    const session = await currentSession(ctx);
    if (!session) {
      ctx.redirect(`/dashboard/sign-in?next=${encodeURIComponent(ctx.method === 'GET' ? ctx.originalUrl : ctx.path)}`);
      return;
    }
    ctx.state.session = session;
    if (ctx.method === 'POST') {
      ctx.state.form = await readForm(ctx);
      requireCsrf(ctx, session, ctx.state.form.get(CSRF_FIELD) ?? undefined);
    }
    if (needs && !can(session, needs)) throw new ServiceError('permission_denied', `Your role (${session.member.role}) does not include the scope "${needs}".`);
    await next();
  };
}

/** Failures on dashboard pages are pages too, with the envelope's status and message. */
export async function htmlErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    const known = err instanceof ServiceError ? err : dependencyFailure(err);
    if (!known) logger.error({ err, request_id: (ctx.state as AppState).requestId }, 'unhandled dashboard error');
    const failure = known ?? new ServiceError('internal_error', 'Internal error.');
    for (const [name, value] of Object.entries(failure.headers)) ctx.set(name, value);
    render(ctx, 'error', { title: 'Error', message: failure.message, code: failure.code }, failure.httpStatus);
  }
}

/**
 * A same-site path to return to after sign-in: a dashboard page, or an OAuth authorization's consent
 * page (api/oauth/interactions.ts); anything else (another site, say) goes home.
 */
export function safeReturnPath(next: string | null | undefined): string {
  return next && (/^\/dashboard(\/[^/\\]|$|\?)/.test(next) || /^\/oauth\/interaction\/[A-Za-z0-9_-]+$/.test(next)) ? next : '/dashboard';
}
