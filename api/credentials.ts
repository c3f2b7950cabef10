import { hashApiKey, looksLikeApiKey } from '../domain/apiKeys';
import { ServiceError } from '../domain/errors';
import { isScope, isStaffScope, type Scope } from '../domain/scopes';
import { sql, statement } from '../db/sql';
import type { Principal } from './state';

/** How long a resolved key is trusted before it is read again: revocation takes effect within this. */
export const CREDENTIAL_CACHE_MS = 5_000;
/** last_used_at is written at most this often per key, off the request's path. */
const LAST_USED_EVERY_MS = 60_000;

interface Cached {
  principal: Principal | null;
  until: number;
}

const cache = new Map<string, Cached>();
const lastUsedWritten = new Map<number, number>();

interface KeyRow {
  key_key: number;
  key_id: string;
  kind: 'workspace' | 'partner';
  environment: 'live' | 'test';
  scopes: string[];
  expires_at: Date | null;
  ws_key: number | null;
  ws_id: string | null;
  tenant_ref: string | null;
  ws_partner: string | null;
  ptn_key: number | null;
  ptn_id: string | null;
}

const LOAD_KEY = statement(
  `SELECT k.id AS key_key, k.public_id AS key_id, k.kind, k.environment, k.scopes, k.expires_at,
            w.id AS ws_key, w.public_id AS ws_id, w.tenant_ref, wp.public_id AS ws_partner,
            p.id AS ptn_key, p.public_id AS ptn_id
       FROM api_keys k
       LEFT JOIN workspaces w ON w.id = k.workspace_id
       LEFT JOIN partners wp ON wp.id = w.partner_id
       LEFT JOIN partners p ON p.id = k.partner_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
);
const TOUCH_KEY = statement('UPDATE api_keys SET last_used_at = now() WHERE id = $1');

async function load(hash: string): Promise<Principal | null> {
  const [row] = await sql.rows<KeyRow>(LOAD_KEY, [hash]);
  if (!row) return null;
  // Staff scopes are never honoured on a customer key, whatever the row says.
  const scopes = row.scopes.filter((s): s is Scope => isScope(s) && !isStaffScope(s));
  return {
    keyKey: row.key_key,
    keyId: row.key_id,
    kind: row.kind,
    environment: row.environment,
    scopes: new Set(scopes),
    workspace: row.ws_key === null ? null : { id: row.ws_key, publicId: row.ws_id!, tenantRef: row.tenant_ref, partnerPublicId: row.ws_partner },
    partner: row.ptn_key === null ? null : { id: row.ptn_key, publicId: row.ptn_id! },
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
  };
}

function touch(principal: Principal, now: number): void {
  const last = lastUsedWritten.get(principal.keyKey) ?? 0;
  if (now - last < LAST_USED_EVERY_MS) return;
  lastUsedWritten.set(principal.keyKey, now);
  sql.rows(TOUCH_KEY, [principal.keyKey]).catch(() => lastUsedWritten.delete(principal.keyKey));
}

const unauthenticated = () => new ServiceError('authentication_error', 'Missing or invalid credential: send Authorization: Bearer <API key>.');

/** Resolves a bearer credential to its principal, or throws 401 for missing, unknown, expired or revoked keys. */
export async function authenticate(authorization: string | undefined): Promise<Principal> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match || !looksLikeApiKey(match[1])) throw unauthenticated();
  const hash = hashApiKey(match[1]);
  const now = Date.now();
  let entry = cache.get(hash);
  if (!entry || entry.until <= now) {
    entry = { principal: await load(hash), until: now + CREDENTIAL_CACHE_MS };
    if (cache.size > 10_000) cache.clear();
    cache.set(hash, entry);
  }
  const principal = entry.principal;
  if (!principal || (principal.expiresAt !== null && principal.expiresAt <= now)) throw unauthenticated();
  touch(principal, now);
  return principal;
}

/** Drops cached credentials (tests that revoke a key and want the effect without waiting). */
export function forgetCredentials(): void {
  cache.clear();
}

export function requireScope(principal: Principal, accepted: readonly Scope[]): void {
  if (accepted.some((s) => principal.scopes.has(s))) return;
  const named = accepted.map((s) => `"${s}"`).join(' or ');
  throw new ServiceError('permission_denied', `This credential lacks the required scope ${named}.`);
}
