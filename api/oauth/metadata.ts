import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PageState } from '../dashboard/page';
import { ROLE_SCOPES } from '../../domain/members';
import { handOver } from './mount';
import { AUDIENCES, RESOURCE_NAMES, issuer, metadataPathOf, resourceOf, type Audience } from './resources';

/** Public, and read by browser-based clients from other origins. */
function publicJson(ctx: Context, body: unknown): void {
  ctx.set({ 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'public, max-age=300' });
  ctx.body = body;
}

/** RFC 9728: what a client needs to get a token for the resource (which server, which scopes). */
function protectedResource(audience: Audience) {
  return {
    resource: resourceOf(audience),
    authorization_servers: [issuer()],
    scopes_supported: ROLE_SCOPES.owner,
    bearer_methods_supported: ['header'],
    resource_name: RESOURCE_NAMES[audience],
  };
}

/**
 * Discovery. Protected-resource metadata at the path form of each resource (RFC 9728 §3.1), the v2
 * API's also at the bare name; authorization-server metadata (RFC 8414, and OpenID Connect's name
 * for it) at the issuer's well-known names, answered by the provider itself.
 */
export function metadataRoutes(router: Router<PageState>): void {
  router.get('/.well-known/oauth-protected-resource', (ctx) => publicJson(ctx, protectedResource('api')));
  for (const audience of AUDIENCES) router.get(metadataPathOf(audience), (ctx) => publicJson(ctx, protectedResource(audience)));
  for (const name of ['oauth-authorization-server', 'openid-configuration']) {
    router.get(`/.well-known/${name}`, (ctx) => handOver(ctx, '/.well-known/openid-configuration'));
  }
}
