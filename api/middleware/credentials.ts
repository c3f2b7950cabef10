import { LRUCache } from 'lru-cache';
import { hashApiKey, looksLikeApiKey } from '../../domain/apiKeys';
import { ServiceError } from '../../domain/errors';
import { isScope, isStaffScope, type Scope } from '../../domain/scopes';
import { findLiveKeyByHash, touchKey } from '../../db/apiKeys';
import { principalFromAccessToken, wwwAuthenticate } from '../oauth/accessTokens';
import type { Audience } from '../oauth/resources';
import type { Principal } from '../../callers/principal';
import { mayBeLiveKey } from '../../callers/liveKeyFilter';

/** How long a resolved key is trusted before it is read again: revocation takes effect within this. */
export const CREDENTIAL_CACHE_MS = 5_000;
/** last_used_at is written at most this often per key, off the request's path. */
const LAST_USED_EVERY_MS = 60_000;

interface Cached {
  principal: Principal | null;
  until: number;
}

// Bounded, least recently used out. Keys that resolve and keys that do not are cached apart, so the
// random keys a prober sends can only push out one another, never the keys in real use.
const known = new LRUCache<string, Cached>({ max: 10_000 });
const unknown = new LRUCache<string, Cached>({ max: 10_000 });
const lastUsedWritten = new Map<number, number>();

async function load(hash: string): Promise<Principal | null> {
  const key = await findLiveKeyByHash(hash);
  if (!key) return null;
  // Staff scopes are never honoured on a customer key, whatever the row says.
  const scopes = key.scopes.filter((s): s is Scope => isScope(s) && !isStaffScope(s));
  return {
    keyKey: key.id,
    memberKey: null,
    keyId: key.publicId,
    kind: key.kind,
    environment: key.environment,
    scopes: new Set(scopes),
    workspace: key.workspace,
    partner: key.partner,
    expiresAt: key.expiresAt ? key.expiresAt.getTime() : null,
  };
}

function touch(keyKey: number, now: number): void {
  const last = lastUsedWritten.get(keyKey) ?? 0;
  if (now - last < LAST_USED_EVERY_MS) return;
  lastUsedWritten.set(keyKey, now);
  touchKey(keyKey).catch(() => lastUsedWritten.delete(keyKey));
}

/** A 401 whose challenge names the resource's OAuth metadata (RFC 9728), so an OAuth client can discover how to get a token. */
const unauthenticated = (audience: Audience, sent: boolean) =>
  new ServiceError('authentication_error', 'Missing or invalid credential: send Authorization: Bearer <API key or OAuth access token>.', {
    'WWW-Authenticate': wwwAuthenticate(audience, sent ? { error: 'invalid_token' } : {}),
  });

/**
 * Resolves a bearer credential to its principal, or throws 401 for missing, unknown, expired or
 * revoked ones. A value shaped like an API key is a key; anything else is tried as an OAuth access
 * token, which must have been issued for `audience` (the v2 API's, unless the caller says otherwise):
 * a token for /mcp is refused on the v2 API and the other way round.
 */
export async function authenticate(authorization: string | undefined, audience: Audience = 'api', o: { throttled?: boolean } = {}): Promise<Principal> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) throw unauthenticated(audience, Boolean(authorization));
  const isKey = looksLikeApiKey(match[1]);
  // Tokens are cached per audience: the same value resolves for one and not the other.
  const cacheKey = isKey ? hashApiKey(match[1]) : `${audience}:${hashApiKey(match[1])}`;
  const now = Date.now();
  // From a throttled address, nothing is looked up unless it may resolve: a credential this process
  // has seen resolve, or a key the filter of live keys admits (callers/liveKeyFilter.ts). An OAuth access
  // token must have resolved here before.
  if (o.throttled && !known.has(cacheKey) && !(isKey && (await mayBeLiveKey(cacheKey)))) throw unauthenticated(audience, true);
  let entry = known.get(cacheKey) ?? unknown.get(cacheKey);
  if (!entry || entry.until <= now) {
    const principal = isKey ? await load(cacheKey) : ((await principalFromAccessToken(match[1], audience)) ?? null);
    entry = { principal, until: now + CREDENTIAL_CACHE_MS };
    (entry.principal ? known : unknown).set(cacheKey, entry);
  }
  const principal = entry.principal;
  if (!principal || (principal.expiresAt !== null && principal.expiresAt <= now)) throw unauthenticated(audience, true);
  if (principal.keyKey !== null) touch(principal.keyKey, now);
  return principal;
}

/** Drops cached credentials (tests that revoke a key and want the effect without waiting). */
export function forgetCredentials(): void {
  known.clear();
  unknown.clear();
}

export function requireScope(principal: Principal, accepted: readonly Scope[]): void {
  if (accepted.some((s) => principal.scopes.has(s))) return;
  const named = accepted.map((s) => `"${s}"`).join(' or ');
  throw new ServiceError('permission_denied', `This credential lacks the required scope ${named}.`);
}
