import { createHash, randomBytes } from 'node:crypto';

export type KeyKind = 'workspace' | 'partner';

const PREFIX: Record<KeyKind, string> = { workspace: 'tgcc_', partner: 'tgpk_' };

/** 32 random bytes, base64url: 256 bits of entropy behind the family prefix. */
export function generateApiKey(kind: KeyKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url');
}

/** Keys are stored only as this digest; a high-entropy secret needs no slow hash. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** A key is its prefix and 43 base64url characters (32 bytes); anything else is refused without a lookup. */
const KEY_SHAPE = /^(tgcc|tgpk)_[A-Za-z0-9_-]{43}$/;

export function looksLikeApiKey(value: string): boolean {
  return KEY_SHAPE.test(value);
}
