import { createHmac, timingSafeEqual } from 'node:crypto';
import { ServiceError } from './errors';

/**
 * Document transfer grants: the signed token in an upload or download path is the credential. It
 * names one document, one purpose, the workspace and an expiry, and is HMAC-SHA256 signed with a key
 * derived from SIGNING_SECRET for this use only. Redemption re-reads the document (api/), so a grant
 * never outlives its document.
 */
export type GrantPurpose = 'upload' | 'download';

export interface Grant {
  document: string;
  workspace: string;
  purpose: GrantPurpose;
  /** Epoch seconds. */
  expiresAt: number;
}

const VERSION = 'g1';
const TOKEN = /^g1\.[A-Za-z0-9_-]{1,512}\.[A-Za-z0-9_-]{43}$/;

function keyFor(secret: string): Buffer {
  return createHmac('sha256', secret).update('document-transfer-grants').digest();
}

function signature(secret: string, signed: string): Buffer {
  return createHmac('sha256', keyFor(secret)).update(signed).digest();
}

export function signGrant(grant: Grant, secret: string): string {
  const payload = Buffer.from(JSON.stringify({ d: grant.document, w: grant.workspace, p: grant.purpose, e: grant.expiresAt }), 'utf8').toString('base64url');
  const signed = `${VERSION}.${payload}`;
  return `${signed}.${signature(secret, signed).toString('base64url')}`;
}

/** A token that is not one of ours (garbled, edited, signed with another secret). Counted as a failed authentication. */
export class InvalidGrant extends ServiceError {
  constructor() {
    super('authentication_error', 'The transfer token is not valid.');
  }
}

/**
 * The grant a token carries, checked in this order: signature (401), expiry (401), purpose (403).
 * Whether its document still exists, and is in the state the purpose needs, is the caller's check.
 */
export function verifyGrant(token: string, purpose: GrantPurpose, secret: string, nowSeconds: number): Grant {
  if (!TOKEN.test(token)) throw new InvalidGrant();
  const cut = token.lastIndexOf('.');
  const expected = signature(secret, token.slice(0, cut));
  const given = Buffer.from(token.slice(cut + 1), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new InvalidGrant();
  let fields: { d?: unknown; w?: unknown; p?: unknown; e?: unknown };
  try {
    fields = JSON.parse(Buffer.from(token.slice(VERSION.length + 1, cut), 'base64url').toString('utf8'));
  } catch {
    throw new InvalidGrant();
  }
  const { d, w, p, e } = fields;
  if (typeof d !== 'string' || typeof w !== 'string' || (p !== 'upload' && p !== 'download') || typeof e !== 'number') throw new InvalidGrant();
  if (e <= nowSeconds) throw new ServiceError('authentication_error', `The transfer token expired at ${new Date(e * 1000).toISOString()}; ask for a new one.`);
  if (p !== purpose) throw new ServiceError('permission_denied', `This token grants a${p === 'upload' ? 'n upload' : ' download'} of its document, not a${purpose === 'upload' ? 'n upload' : ' download'}.`);
  return { document: d, workspace: w, purpose: p, expiresAt: e };
}
