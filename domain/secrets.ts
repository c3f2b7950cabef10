/**
 * Workspace secrets: credentials an agent's tools use (an MCP server's bearer token), named in agent
 * config by `credential: NAME` and never held there. Sealed at rest (db/workspaceSecrets.ts); a value
 * is never returned, logged, or put in an error message, by the API, the CLI or the dashboard.
 */

/** A secret's name: what agent config names it by, and the last segment of its path. */
// Not dots alone: `.` and `..` would collapse out of the secret's path.
export const SECRET_NAME = /^(?!\.+$)[A-Za-z0-9_.-]{1,64}$/;

export const SECRET_NAME_MESSAGE = 'name must be 1 to 64 characters of letters, digits, "_", "." and "-", not dots alone';

/** The most secrets a workspace holds: credentials for its tools, not a store. */
export const SECRETS_PER_WORKSPACE = 100;

/** The largest value (UTF-8 bytes) a secret holds: a bearer token, not a document. */
export const MAX_SECRET_BYTES = 8192;

export const SECRET_VALUE_MESSAGE = `value must be a non-empty string of at most ${MAX_SECRET_BYTES} bytes (UTF-8) that a header can carry: no control characters, nothing past Latin-1, no spaces at its ends`;

export function isSecretName(name: unknown): name is string {
  return typeof name === 'string' && SECRET_NAME.test(name);
}

/** Whether a value may be stored: a string of 1 to MAX_SECRET_BYTES UTF-8 bytes (never echoed back when it may not). */
// A credential is sent as a header: one a header could not carry could never be sent (and fetch's
// refusal would quote it whole).
export function isSecretValue(value: unknown): value is string {
  return typeof value === 'string' && Buffer.byteLength(value, 'utf8') <= MAX_SECRET_BYTES && isHeaderValue(value);
}

/** What an HTTP header value may hold: visible ASCII, spaces inside, and Latin-1 past it (fetch takes bytes only). */
const HEADER_VALUE = /^[\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?$/;

export function isHeaderValue(value: string): boolean {
  return HEADER_VALUE.test(value);
}

export const SECRET_ORIGIN_MESSAGE = 'origin must be an origin alone: http(s)://host[:port], without a path';

/**
 * Whether a value is an origin as URL.origin writes it (`https://mcp.example.com`, a port when not
 * the scheme's own): what a secret is bound to, and sent nowhere else.
 */
export function isSecretOrigin(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
}

/** A secret as every surface shows it: its name, the origin it is sent to (null until set or first used) and times, never its value. */
export interface SecretView {
  name: string;
  origin: string | null;
  created_at: Date;
  updated_at: Date;
}

export function secretObject(s: SecretView) {
  return { object: 'secret' as const, name: s.name, origin: s.origin, created_at: s.created_at.toISOString(), updated_at: s.updated_at.toISOString() };
}
