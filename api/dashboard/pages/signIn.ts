import type Router from '@koa/router';
import type { Context } from 'koa';
import { timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../../../domain/errors';
import { MIN_PASSWORD_LENGTH, hashPassword, secretToken, tokenHash, verifyPassword } from '../../../domain/members';
import { completeSetup, findMemberByEmail, findMemberBySetupToken } from '../../../db/members';
import { addressRefusedFor, recordAuthFailure } from '../../../callers/authFailures';
import { CSRF_FIELD, currentSession, finishSession, secureCookies, startSession } from '../../../callers/sessions';
import { withPasswordSlot } from '../passwordSlots';
import { memberPage, readForm, render, safeReturnPath, type PageState } from '../page';

/**
 * Before a session exists, a form is protected by a double-submitted token: a strict same-site cookie
 * and the same value in the form. It keeps another site from signing a browser in to its own account.
 */
// Over HTTPS the __Host- prefix keeps a sibling subdomain from planting a value of its own.
const formCookie = (secure: boolean) => (secure ? '__Host-aes_form' : 'aes_form');

function issueFormToken(ctx: Context): string {
  const token = secretToken();
  const secure = secureCookies(ctx);
  ctx.cookies.set(formCookie(secure), token, { httpOnly: true, sameSite: 'strict', secure, path: '/', overwrite: true });
  return token;
}

function checkFormToken(ctx: Context, form: URLSearchParams): void {
  const cookie = Buffer.from(ctx.cookies.get(formCookie(secureCookies(ctx))) ?? '');
  const sent = Buffer.from(form.get(CSRF_FIELD) ?? '');
  if (cookie.length === 0 || cookie.length !== sent.length || !timingSafeEqual(cookie, sent)) {
    throw new ServiceError('permission_denied', 'The form has expired: reload the page and submit it again.');
  }
}

function refuseBlockedAddress(ctx: Context): void {
  const wait = addressRefusedFor(ctx.ip);
  if (wait !== undefined) throw new ServiceError('rate_limited', `Too many failed sign-ins from this address; try again in ${wait} seconds.`, { 'Retry-After': String(wait) });
}

/** Sign-in, sign-out, and the one-time set-up link where a new member chooses a password. */
export function signInPages(router: Router<PageState>): void {
  router.get('/dashboard/sign-in', async (ctx) => {
    if (await currentSession(ctx)) return ctx.redirect(safeReturnPath(ctx.query.next as string | undefined));
    render(ctx, 'signIn', { title: 'Sign in', formToken: issueFormToken(ctx), next: safeReturnPath(ctx.query.next as string | undefined) });
  });

  router.post('/dashboard/sign-in', async (ctx) => {
    refuseBlockedAddress(ctx);
    const form = await readForm(ctx);
    checkFormToken(ctx, form);
    const email = form.get('email') ?? '';
    const next = safeReturnPath(form.get('next'));
    const member = email ? await findMemberByEmail(email) : undefined;
    // A wrong email costs a hash like a wrong password, so the answer time does not tell which it was.
    const valid = await withPasswordSlot(() => verifyPassword(form.get('password') ?? '', member?.passwordHash ?? null));
    if (!member || !valid) {
      await recordAuthFailure(ctx.ip);
      return render(ctx, 'signIn', { title: 'Sign in', formToken: issueFormToken(ctx), next, email, error: 'That email and password do not match a member.' }, 401);
    }
    await startSession(ctx, member.id);
    ctx.redirect(next);
  });

  router.post('/dashboard/sign-out', memberPage(), async (ctx) => {
    await finishSession(ctx);
    ctx.redirect('/dashboard/sign-in');
  });

  router.get('/dashboard/setup', async (ctx) => {
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    if (!(await findMemberBySetupToken(tokenHash(token)))) throw unusableLink();
    render(ctx, 'setup', { title: 'Choose a password', token, formToken: issueFormToken(ctx), minLength: MIN_PASSWORD_LENGTH });
  });

  router.post('/dashboard/setup', async (ctx) => {
    refuseBlockedAddress(ctx);
    const form = await readForm(ctx);
    checkFormToken(ctx, form);
    const token = form.get('token') ?? '';
    // The link is looked up before the password is hashed (about 128 MiB and 0.1 s in a bounded slot):
    // an unknown one costs a lookup and counts against the address, as a failed sign-in does.
    if (!(await findMemberBySetupToken(tokenHash(token)))) {
      await recordAuthFailure(ctx.ip);
      throw unusableLink();
    }
    const password = form.get('password') ?? '';
    const problem =
      password.length < MIN_PASSWORD_LENGTH ? `Use at least ${MIN_PASSWORD_LENGTH} characters.` : password !== form.get('confirm') ? 'The two passwords differ.' : undefined;
    if (problem) return render(ctx, 'setup', { title: 'Choose a password', token, formToken: issueFormToken(ctx), minLength: MIN_PASSWORD_LENGTH, error: problem }, 400);
    // Still one statement that consumes the link: two submissions of one link set one password.
    const member = await completeSetup(tokenHash(token), await withPasswordSlot(() => hashPassword(password)));
    if (!member) throw unusableLink();
    await startSession(ctx, member.id);
    ctx.redirect('/dashboard');
  });
}

const unusableLink = () => new ServiceError('setup_link_not_found', 'This set-up link is unknown, already used or expired: ask for a new one.');
