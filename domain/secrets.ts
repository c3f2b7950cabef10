/**
 * Workspace secrets: credentials an agent's tools use (an MCP server's bearer token), named in agent
 * config by `credential: NAME` and never held there. Sealed at rest (db/workspaceSecrets.ts); a value
 * is never returned, logged, or put in an error message, by the API, the CLI or the dashboard.
 */
import { closed, constant, list, matching, orNull, ref, text, timestamp, uri, type Static } from './shape';

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

export const SECRET_ORIGIN_MESSAGE =
  'origin must be an origin, http(s)://host[:port], or an origin and a path prefix ending in "/" (https://host/tenant-a/), written as a URL parser writes it: no query, fragment or user';

/**
 * Where a secret is bound, and sent nowhere else: an origin as URL.origin writes it
 * (`https://mcp.example.com`, a port when not the scheme's own), which admits every path on it, or an
 * origin and a path prefix ending in `/` (`https://host/tenant-a/`), which admits only the paths under
 * it: a host that serves many tenants under one origin by path gives each its own.
 */
export function isSecretOrigin(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  if (url.origin === value) return true;
  // Canonical (as the parser writes it: no dot segments, no case games), and nothing past the prefix.
  return url.href === value && url.pathname !== '/' && url.pathname.endsWith('/') && !url.username && !url.password && !url.search && !url.hash && !ENCODED_SEPARATOR.test(url.pathname);
}

/** A separator a server may decode before routing: with it a path could leave its prefix there. */
const ENCODED_SEPARATOR = /%2f|%5c/i;

/**
 * What an unbound secret (an operator's `secret set` without an origin) binds to at its first use:
 * the server URL's origin and its path up to and including the last `/` (`https://host/tenant-a/mcp`
 * binds `https://host/tenant-a/`; a server at the origin's top binds the origin alone).
 */
export function secretBindingOf(serverUrl: string): string {
  const url = new URL(serverUrl);
  const prefix = url.pathname.slice(0, url.pathname.lastIndexOf('/') + 1);
  return prefix === '/' ? url.origin : url.origin + prefix;
}

/**
 * Whether a secret bound to `binding` may be sent to a server at `serverUrl`: the same origin and,
 * when the binding has a path prefix, a path under it (compared as parsed, so dot segments are
 * resolved first) without an encoded separator.
 */
export function secretGoesTo(binding: string, serverUrl: string): boolean {
  const bound = new URL(binding);
  const target = new URL(serverUrl);
  if (bound.origin !== target.origin) return false;
  if (bound.pathname === '/') return true;
  return target.pathname.startsWith(bound.pathname) && !ENCODED_SEPARATOR.test(target.pathname);
}

/** A secret as every surface shows it: its name, where it is sent (an origin, or an origin and path prefix; null until set or first used) and times, never its value. */
export interface SecretView {
  name: string;
  origin: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The secret object: its shape, declared once for the view and the OpenAPI document. */
export const Secret = closed(
  {
    object: constant('secret'),
    name: matching(SECRET_NAME.source),
    origin: orNull(
      uri(
        "Where the secret is sent: an origin (every path on it) or an origin and a path prefix ending in `/` (the server URLs under it); given when it was set, or its first use's origin and path up to its last `/`; null until then.",
      ),
    ),
    created_at: timestamp(),
    updated_at: timestamp('When its value was last set.'),
  },
  'A workspace secret as every answer shows it: its name and times, never its value.',
);

export function secretObject(s: SecretView): Static<typeof Secret> {
  return { object: 'secret', name: s.name, origin: s.origin, created_at: s.created_at.toISOString(), updated_at: s.updated_at.toISOString() };
}

/** Every secret of the workspace, in one page (a workspace holds at most SECRETS_PER_WORKSPACE). */
export const SecretList = closed({ object: constant('list'), data: list(ref<Static<typeof Secret>>('Secret')), has_more: constant(false) });

export function secretList(secrets: SecretView[]): Static<typeof SecretList> {
  return { object: 'list', data: secrets.map(secretObject), has_more: false };
}

/** A removed secret, as DELETE answers it (by name: a secret has no id). */
export const SecretDeleted = closed({ object: constant('secret'), name: text(), deleted: constant(true) });

export function secretDeleted(name: string): Static<typeof SecretDeleted> {
  return { object: 'secret', name, deleted: true };
}
