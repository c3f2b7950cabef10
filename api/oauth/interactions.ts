import type Router from '@koa/router';
import type { InteractionDetails, Provider } from 'oidc-provider';
import { ServiceError } from '../../domain/errors';
import { ROLE_SCOPES } from '../../domain/members';
import { memberPage, render, type PageContext, type PageState } from '../dashboard/page';
import { oauthProvider } from './provider';
import { RESOURCE_NAMES, audienceOf } from './resources';

/** Scopes of OpenID Connect itself: granted with the resource's, never shown as permissions. */
const OIDC_SCOPES = new Set(['openid', 'offline_access']);
const RESOURCE_SCOPES = new Set<string>(ROLE_SCOPES.owner);

interface Consent {
  provider: Provider;
  details: InteractionDetails;
  resource: string;
  /** Requested scopes the resource knows, in the order asked. */
  requested: string[];
  /** Of those, what this member's role lets them grant. */
  offered: string[];
}

/** The authorization request behind the page, read from the provider's interaction cookie. */
async function consentFor(ctx: PageContext): Promise<Consent> {
  const provider = await oauthProvider();
  const details = await provider.interactionDetails(ctx.req, ctx.res).catch(() => undefined);
  if (!details || details.uid !== ctx.params.uid) {
    throw new ServiceError('invalid_request', 'This authorization request is unknown or has expired: start again from the application.');
  }
  const resource = details.params.resource;
  // The provider admitted exactly one known resource (provider.ts); anything else is not this page's to grant.
  if (typeof resource !== 'string' || !audienceOf(resource)) throw new ServiceError('invalid_request', 'The authorization request names no resource of this service.');
  const requested = [...new Set((details.params.scope ?? '').split(' ').filter((s) => RESOURCE_SCOPES.has(s)))];
  const role = new Set<string>(ROLE_SCOPES[ctx.state.session.member.role]);
  return { provider, details, resource, requested, offered: requested.filter((s) => role.has(s)) };
}

/**
 * The page's own forms post to this origin, but the answer redirects on to the client's redirect
 * URI, and browsers hold the whole redirect chain to form-action: that one target is admitted too.
 */
function allowRedirectTo(ctx: PageContext, redirectUri: string): void {
  const target = new URL(redirectUri);
  const source = target.protocol === 'http:' || target.protocol === 'https:' ? target.origin : target.protocol;
  ctx.set('Content-Security-Policy', ctx.response.get('Content-Security-Policy').replace("form-action 'self'", `form-action 'self' ${source}`));
}

/** Hands the outcome to the provider, which answers the client at its redirect URI (with `iss`, RFC 9207). */
async function finish(ctx: PageContext, consent: Consent, result: Parameters<Provider['interactionResult']>[2]): Promise<void> {
  const returnTo = await consent.provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
  ctx.redirect(returnTo);
  ctx.status = 303;
}

/**
 * The consent page of an authorization request. Signing in is the dashboard's (memberPage() sends a
 * member without a session to sign in and back here); the grant is the member's (accountId = `mem_…`,
 * so their workspace) with the scopes they tick, none beyond their role's.
 */
export function interactionRoutes(router: Router<PageState>): void {
  router.get('/oauth/interaction/:uid', memberPage(), async (ctx) => {
    const consent = await consentFor(ctx);
    const client = await consent.provider.Client.find(consent.details.params.client_id);
    const audience = audienceOf(consent.resource)!;
    render(ctx, 'consent', {
      title: 'Authorize an application',
      uid: consent.details.uid,
      client: client?.clientName ?? consent.details.params.client_id,
      clientId: consent.details.params.client_id,
      redirectUri: consent.details.params.redirect_uri,
      resource: consent.resource,
      resourceName: RESOURCE_NAMES[audience],
      offered: consent.offered,
      withheld: consent.requested.filter((s) => !consent.offered.includes(s)),
    });
    allowRedirectTo(ctx, consent.details.params.redirect_uri);
  });

  router.post('/oauth/interaction/:uid/confirm', memberPage(), async (ctx) => {
    const consent = await consentFor(ctx);
    const chosen = [...new Set(ctx.state.form.getAll('scope'))];
    const beyond = chosen.filter((s) => !consent.offered.includes(s));
    if (beyond.length) {
      throw new ServiceError('permission_denied', `Your role (${ctx.state.session.member.role}) cannot grant what was not offered: ${beyond.join(', ')}.`);
    }
    const { member } = ctx.state.session;
    const grant = new consent.provider.Grant({ accountId: member.publicId, clientId: consent.details.params.client_id });
    if (chosen.length) grant.addResourceScope(consent.resource, chosen.join(' '));
    // Scopes left unticked are recorded as refused, so the provider does not ask for them again.
    const refused = consent.requested.filter((s) => !chosen.includes(s));
    if (refused.length) grant.rejectResourceScope(consent.resource, refused.join(' '));
    const oidc = (consent.details.params.scope ?? '').split(' ').filter((s) => OIDC_SCOPES.has(s));
    if (oidc.length) grant.addOIDCScope(oidc.join(' '));
    const grantId = await grant.save();
    await finish(ctx, consent, { login: { accountId: member.publicId }, consent: { grantId } });
  });

  router.post('/oauth/interaction/:uid/deny', memberPage(), async (ctx) => {
    const consent = await consentFor(ctx);
    await finish(ctx, consent, { error: 'access_denied', error_description: 'The member denied the authorization request.' });
  });
}
