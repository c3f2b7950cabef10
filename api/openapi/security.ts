import { CUSTOMER_SCOPES } from '../../domain/scopes';
import type { JsonSchema } from './jsonSchema';

/**
 * The security schemes (spec "Authentication" 3: a company API key, an application credential, a
 * dashboard session), and the operator tokens of the paths beside the API. `usedBy` says, per scope,
 * which operations need it: the application credential's scope list is the registry, described by use.
 */
export function securitySchemes(usedBy: ReadonlyMap<string, string[]>): Record<string, JsonSchema> {
  const scopes = Object.fromEntries(CUSTOMER_SCOPES.map((s) => [s, usedBy.has(s) ? `Needed by ${usedBy.get(s)!.join(', ')}.` : 'In the registry; no HTTP operation of this version needs it.']));
  return {
    companyApiKey: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'tgcc_… (workspace) or tgpk_… (partner)',
      description:
        'A managed API key, `Authorization: Bearer <API_KEY>`. A workspace key is prefixed `tgcc_`, a reseller (partner) key `tgpk_`. Minted in the dashboard (or `admin key create`), shown once, stored as a hash; for backends only.',
    },
    applicationCredential: {
      type: 'oauth2',
      description:
        'An OAuth 2.1 access token of an application, sent as `Authorization: Bearer <token>`: authorization-code flow with PKCE (S256, never `plain`), consented by a workspace member, bound to one resource (RFC 8707): `/api/v2` for these operations, `/mcp` for the MCP transport; a token for the other is refused. Discovery: `/.well-known/oauth-protected-resource` (and `…/mcp`), `/.well-known/oauth-authorization-server`; registration at `/oauth/reg`.',
      flows: { authorizationCode: { authorizationUrl: '/oauth/auth', tokenUrl: '/oauth/token', refreshUrl: '/oauth/token', scopes } },
    },
    dashboardSession: {
      type: 'apiKey',
      in: 'cookie',
      name: 'aes_session',
      description: 'The dashboard\'s session cookie. Requests with an unsafe method (POST, PUT, PATCH, DELETE) also need the `csrfToken` header.',
    },
    csrfToken: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'The CSRF token of the dashboard session; required with `dashboardSession` on unsafe methods.' },
    operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator credential of the codec endpoint: `CODEC_OPERATOR_TOKEN`. Without it set, the endpoint is off (501).' },
    metricsToken: { type: 'http', scheme: 'bearer', description: '`METRICS_TOKEN`: without it /metrics is off, except in development mode (`DEVELOPMENT_MODE`), where it needs no credential.' },
  };
}
