import { invalidRequest, type ServiceError } from './errors';
import { ID_PREFIX, type IdKind } from './ids';

/** The ULID part of a public id, as mintId writes it (lowercase Crockford base32). */
const ULID = /^[0-9a-hjkmnp-tv-z]{26}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** Far above any cursor this module writes; stops a huge query value from being decoded at all. */
const MAX_CURSOR_LENGTH = 256;

/** The one answer for any cursor that cannot be used, so a refusal never says which check failed. */
export function invalidCursor(): ServiceError {
  return invalidRequest('cursor is not valid: pass back the `next` value of a previous page unchanged.');
}

/**
 * A page cursor: base64url of {"id": "<public id of the last item served>"}. It holds a public id,
 * never a database key, so handing it to the caller exposes nothing they have not already seen.
 */
export function encodeCursor(publicId: string): string {
  return Buffer.from(JSON.stringify({ id: publicId }), 'utf8').toString('base64url');
}

/**
 * The public id inside a cursor of the given kind. Anything this module did not write (garbled,
 * truncated, edited, another kind's id) is a 400, so a client never pages from a guessed position.
 */
export function decodeCursor(cursor: string, kind: IdKind): string {
  if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) throw invalidCursor();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidCursor();
  const { id, ...rest } = parsed as Record<string, unknown>;
  if (typeof id !== 'string' || Object.keys(rest).length > 0) throw invalidCursor();
  const prefix = ID_PREFIX[kind];
  if (!id.startsWith(prefix) || !ULID.test(id.slice(prefix.length))) throw invalidCursor();
  // Base64 decoding tolerates variants (padding bits, whitespace in the JSON); only the exact text we wrote is accepted.
  if (encodeCursor(id) !== cursor) throw invalidCursor();
  return id;
}
