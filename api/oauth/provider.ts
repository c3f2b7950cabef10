import type { Provider } from 'oidc-provider';
import { ROLE_SCOPES } from '../../domain/members';
import { findLiveMember } from '../../db/members';
import { config } from '../../infra/config';
import { logger } from '../../infra/logger';
import { render } from '../dashboard/page';
import { PostgresAdapter } from './adapter';
import { cookieKeys, signingJwk } from './keys';
import { checkRedirectUris } from './redirectUris';
import { AUDIENCES, issuer, resourceOf } from './resources';

/** Where the provider's own routes are mounted: /oauth/auth, /oauth/token, /oauth/reg, /oauth/jwks, ... */
export const OAUTH_PREFIX = '/oauth';
/** The consent page of an authorization request (api/oauth/interactions.ts). */
export const interactionPath = (uid: string) => `${OAUTH_PREFIX}/interaction/${uid}`;

/** Lifetimes, in seconds. */
export const TTL = {
  AccessToken: 10 * 60,
  AuthorizationCode: 60,
  // Slides: every refresh replaces the token with one good for this long again...
  RefreshToken: 14 * 24 * 3600,
  // ...within the grant's life: a connection is consented again after this at the latest.
  Grant: 90 * 24 * 3600,
  Interaction: 30 * 60,
  // The provider's browser session only carries one authorization: the dashboard's session is the sign-in.
  Session: 10 * 60,
} as const;

/** Every scope a member's role can grant; a token for either resource may carry any of them. */
const GRANTABLE = ROLE_SCOPES.owner.join(' ');

let created: Promise<Provider> | undefined;

/**
 * The authorization server (oidc-provider), created on first use: the issuer is PUBLIC_BASE_URL as
 * configured then. Tests that change PUBLIC_BASE_URL call resetOAuthProvider().
 */
export function oauthProvider(): Promise<Provider> {
  created ??= create().catch((err) => {
    created = undefined;
    throw err;
  });
  return created;
}

export function resetOAuthProvider(): void {
  created = undefined;
}

async function create(): Promise<Provider> {
  // ESM-only: a real require() at run time in the CommonJS build (Node >= 20.19 loads ESM that way).
  const { Provider, errors } = await import('oidc-provider');
  const provider = new Provider(issuer(), {
    adapter: PostgresAdapter,
    jwks: { keys: [signingJwk()] },
    cookies: { keys: cookieKeys() },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    responseTypes: ['code'],
    // Public clients only: a native or browser MCP client holds no secret worth the name.
    clientAuthMethods: ['none'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    // RFC 7591's software_id rides along so that the redirect URIs can be checked with it (see checkRedirectUris).
    extraClientMetadata: { properties: ['software_id'], validator: checkRedirectUris(errors.InvalidClientMetadata) },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, initialAccessToken: false },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx: { oidc: { route: string } }, _client: unknown, oneOf?: string[]) => {
          if (oneOf) return oneOf;
          if (ctx.oidc.route === 'authorization') throw new errors.InvalidTarget(`name the resource: ${AUDIENCES.map(resourceOf).join(' or ')}`);
          return undefined;
        },
        // A code or refresh token redeemed without naming the resource gets a token for the one consented.
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx: { oidc: { route: string; params: { resource?: string | string[] } } }, indicator: string) => {
          if (!AUDIENCES.some((a) => resourceOf(a) === indicator)) throw new errors.InvalidTarget(`unknown resource; this server protects ${AUDIENCES.map(resourceOf).join(' and ')}`);
          // One resource per authorization: the consent page shows it, and the token is bound to it.
          if (ctx.oidc.route === 'authorization' && Array.isArray(ctx.oidc.params.resource)) throw new errors.InvalidTarget('request one resource per authorization');
          return { scope: GRANTABLE, audience: indicator, accessTokenFormat: 'opaque', accessTokenTTL: TTL.AccessToken };
        },
      },
    },
    ttl: TTL,
    // Every authorization passes the consent page, which needs the dashboard's session: only the grant
    // just made there counts, an earlier one is never reused silently (signing out stops new authorizations).
    loadExistingGrant: (ctx: { oidc: { provider: Provider; result?: { consent?: { grantId?: string } } } }) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    // Tokens outlive the provider's short browser session; a revoked member ends them instead.
    expiresWithSession: () => false,
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    findAccount: async (_ctx: unknown, sub: string) => {
      const member = await findLiveMember(sub);
      return member && { accountId: member.publicId, claims: () => ({ sub: member.publicId }) };
    },
    // Pins the token to the member's workspace as it was at issue (checked again on every use).
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => {
      const member = token.accountId ? await findLiveMember(token.accountId) : undefined;
      return member && { workspace: member.workspace.publicId };
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => interactionPath(interaction.uid) },
    renderError: (ctx: Parameters<typeof render>[0], out: { error: string; error_description?: string }) => {
      render(ctx, 'error', { title: 'Authorization failed', message: out.error_description ?? out.error, code: out.error }, ctx.status);
    },
  });
  // Like the API: forwarded headers count only behind the proxies the operator names.
  provider.proxy = config().trustProxyHops > 0;
  provider.maxIpsCount = config().trustProxyHops;
  provider.on('server_error', (_ctx: unknown, err: Error) => logger.error({ err }, 'OAuth server error'));
  return provider;
}
