import { config } from '../../infra/config';

/** The two protected resources an access token can be bound to (RFC 8707), by their short names. */
export type Audience = 'api' | 'mcp';
export const AUDIENCES: readonly Audience[] = ['api', 'mcp'];

const PATHS: Record<Audience, string> = { api: '/api/v2', mcp: '/mcp' };
export const RESOURCE_NAMES: Record<Audience, string> = { api: 'Agent Execution API v2', mcp: 'MCP tool endpoint' };

/** PUBLIC_BASE_URL without a trailing slash: the issuer and the base of both resources. */
export function issuer(): string {
  return config().publicBaseUrl.replace(/\/+$/, '');
}

/** The resource indicator of an audience, e.g. https://api.example.com/mcp. */
export function resourceOf(audience: Audience): string {
  return issuer() + PATHS[audience];
}

export function audienceOf(resource: string): Audience | undefined {
  return AUDIENCES.find((a) => resourceOf(a) === resource);
}

/** Where a resource's metadata lives (RFC 9728 §3.1: the well-known name inserted before the path). */
export function metadataPathOf(audience: Audience): string {
  return `/.well-known/oauth-protected-resource${PATHS[audience]}`;
}

/**
 * The challenge of a 401 (or of a 403 for a missing scope) on a protected resource: it names the
 * resource's metadata, from which a client discovers the authorization server (RFC 9728 §5.1).
 */
export function wwwAuthenticate(resource: Audience, extra: { error?: string; scope?: string[] } = {}): string {
  const params = [`resource_metadata="${issuer()}${metadataPathOf(resource)}"`];
  if (extra.error) params.push(`error="${extra.error}"`);
  if (extra.scope?.length) params.push(`scope="${extra.scope.join(' ')}"`);
  return `Bearer ${params.join(', ')}`;
}
