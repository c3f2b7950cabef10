import { createHash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { CUSTOMER_SCOPES, type Scope } from './scopes';

/** What a workspace member may do, in the dashboard and with a dashboard session on the API. */
export const ROLES = ['owner', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

// Partner-side scopes act on a partner's account, which a workspace member does not hold.
const WORKSPACE_SCOPES = CUSTOMER_SCOPES.filter((s) => !s.startsWith('webhooks:') && s !== 'tenants:write' && s !== 'tenants:read');
// Credentials are the owner's to hand out: a developer works with agents and runs, never mints keys.
const DEVELOPER_SCOPES = WORKSPACE_SCOPES.filter((s) => s !== 'keys:write');
const VIEWER_SCOPES = WORKSPACE_SCOPES.filter((s) => s.endsWith(':read'));

/** Role-derived scopes: a member's session carries exactly these (spec, Authentication 3). */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = { owner: WORKSPACE_SCOPES, developer: DEVELOPER_SCOPES, viewer: VIEWER_SCOPES };

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** A signed-in session lasts this long; signing in again starts a new one. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** A set-up link printed by the admin CLI is good for this long, once. */
export const SETUP_TTL_MS = 24 * 60 * 60 * 1000;
export const MIN_PASSWORD_LENGTH = 12;

/** Session cookies, set-up tokens and CSRF tokens: 32 random bytes. */
export function secretToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Tokens are stored only as this digest; a 256-bit random token needs no slow hash. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

// OWASP's scrypt parameters (N = 2^17, r = 8, p = 1): about 128 MiB and a tenth of a second per hash.
const SCRYPT: ScryptOptions = { N: 2 ** 17, r: 8, p: 1, maxmem: 256 * 1024 * 1024 };
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash`: the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  // A member without a password (set-up pending) costs the same as a wrong one, so timing tells nothing.
  const [scheme, n, r, p, salt, hash] = (stored ?? DUMMY_HASH).split('$');
  if (scheme !== 'scrypt') return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem });
  return stored !== null && key.length === expected.length && timingSafeEqual(key, expected);
}

const DUMMY_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_LENGTH).toString('base64url')}`;
