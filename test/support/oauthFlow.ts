import * as oauth from 'oauth4webapi';
import * as admin from '../../admin/commands';
import { completeSetup } from '../../db/members';
import { hashPassword, tokenHash } from '../../domain/members';
import type { Tenant } from './stack';

/**
 * An OAuth client and a member's browser, driving the authorization-code flow against the API under
 * test (oauth4webapi for the client side; sign-in and consent pages by plain requests).
 */
let baseUrl: () => string = () => {
  throw new Error('call useOAuthFlow(api) first');
};

export function useOAuthFlow(api: { readonly url: string }): void {
  baseUrl = () => api.url;
}

export const PASSWORD = 'correct horse battery staple';
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const insecure = { [oauth.allowInsecureRequests]: true };

/** A browser reduced to what the flow needs: a cookie jar and redirects followed by hand. */
export class Browser {
  private readonly jar = new Map<string, string>();

  async go(url: string, init: { method?: string; form?: Record<string, string | string[]> } = {}): Promise<{ status: number; location?: string; html: string }> {
    const headers: Record<string, string> = { cookie: [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ') };
    let body: string | undefined;
    if (init.form) {
      const form = new URLSearchParams();
      for (const [k, v] of Object.entries(init.form)) for (const one of [v].flat()) form.append(k, one);
      body = form.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(new URL(url, baseUrl()), { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at), pair.slice(at + 1)];
      if (/expires=Thu, 01 Jan 1970/i.test(cookie) || value === '') this.jar.delete(name);
      else this.jar.set(name, value);
    }
    const location = res.headers.get('location') ?? undefined;
    return { status: res.status, location: location && new URL(location, baseUrl()).href, html: await res.text() };
  }
}

export const fieldValue = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1];
export const offeredScopes = (html: string) => [...html.matchAll(/name="scope" value="([^"]+)"/g)].map((m) => m[1]);

export interface Member {
  id: string;
  email: string;
  browser: Browser;
}

/** A member of the tenant's workspace with a password, not signed in yet. */
export async function member(t: Tenant, role: string): Promise<Member> {
  const created = await admin.createMember({ workspace: t.workspace, email: `${role}-${t.model}@example.test`, role });
  const setupToken = new URL(created.setup_url).searchParams.get('token')!;
  await completeSetup(tokenHash(setupToken), await hashPassword(PASSWORD));
  return { id: created.id, email: created.email, browser: new Browser() };
}

/** Discovery as an MCP-style client does it: the resource's metadata names the authorization server. */
export async function discover(resource: string): Promise<oauth.AuthorizationServer> {
  const rs = await oauth.processResourceDiscoveryResponse(new URL(resource), await oauth.resourceDiscoveryRequest(new URL(resource), insecure));
  expect(rs.authorization_servers).toEqual([baseUrl()]);
  const issuer = new URL(rs.authorization_servers![0]);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
}

export async function register(as: oauth.AuthorizationServer): Promise<oauth.Client> {
  const response = await oauth.dynamicClientRegistrationRequest(as, { client_name: 'Test MCP client', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }, insecure);
  return oauth.processDynamicClientRegistrationResponse(response);
}

export interface Request {
  resource?: string;
  scopes: string[];
  method?: string;
}

/** The authorization request's URL, with PKCE S256 unless the test asks for another method. */
export async function authorizationUrl(as: oauth.AuthorizationServer, client: oauth.Client, r: Request) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: r.scopes.join(' '),
    state,
    code_challenge: r.method === 'plain' ? verifier : await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: r.method ?? 'S256',
    ...(r.resource && { resource: r.resource }),
  }).toString();
  return { url: url.href, verifier, state };
}

/** Follows redirects within the service until one leaves it (the client's redirect URI) or a page answers. */
export async function follow(browser: Browser, url: string) {
  let page = await browser.go(url);
  while (page.location?.startsWith(baseUrl())) page = await browser.go(page.location);
  return page;
}

/** Signs in on the dashboard's sign-in page the consent page sent the member to; lands back on the consent page. */
export async function signIn(m: Member, form: { html: string }) {
  const next = fieldValue(form.html, 'next')!;
  expect(next).toMatch(/^\/oauth\/interaction\/[\w-]+$/);
  const done = await m.browser.go('/dashboard/sign-in', { form: { _csrf: fieldValue(form.html, '_csrf')!, next, email: m.email, password: PASSWORD } });
  expect(done.location).toBe(baseUrl() + next);
  return m.browser.go(done.location!);
}

/** Up to the consent page, signing in on the way when the member has no dashboard session. */
export async function consentPage(m: Member, url: string) {
  let page = await follow(m.browser, url);
  if (!page.html.includes('action="/oauth/interaction/')) {
    expect(page.html).toContain('action="/dashboard/sign-in"');
    page = await signIn(m, page);
  }
  expect(page.status).toBe(200);
  return page;
}

/** The consent page's answer: the client's redirect URI with the code (or the error). */
export async function decide(m: Member, consent: { html: string }, decision: { grant: string[] } | 'deny') {
  const action = new RegExp(`action="(/oauth/interaction/[\\w-]+/${decision === 'deny' ? 'deny' : 'confirm'})"`).exec(consent.html)![1];
  const form = { _csrf: fieldValue(consent.html, '_csrf')!, ...(decision !== 'deny' && { scope: decision.grant }) };
  const posted = await m.browser.go(action, { form });
  expect(posted.status).toBe(303);
  const landed = await follow(m.browser, posted.location!);
  expect(landed.location).toMatch(new RegExp(`^${REDIRECT_URI}\\?`));
  return new URL(landed.location!);
}

/** A complete authorization: consent granting `grant`, the code exchanged (with `iss` checked). */
export async function connect(m: Member, r: Request & { grant: string[] }) {
  const as = await discover(r.resource!);
  const client = await register(as);
  const request = await authorizationUrl(as, client, r);
  const callback = await decide(m, await consentPage(m, request.url), { grant: r.grant });
  const params = oauth.validateAuthResponse(as, client, callback, request.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, request.verifier, insecure);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  return { as, client, tokens };
}

