import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { config } from './config';
import { logger } from './logger';

/**
 * AES-256-GCM under a key ring from configuration (PAYLOAD_ENCRYPTION_KEYS: `kid:base64key,…`, the
 * first one encrypts, every one decrypts), so keys rotate by putting a new one first and dropping
 * the old one once nothing it sealed is kept any more. Used for Temporal payloads (the payload codec)
 * and for stored answers (idempotency records): what a stateless run exchanged is kept only sealed.
 */
export interface KeyRing {
  active: { id: string; key: Buffer };
  byId: Map<string, Buffer>;
}

/** Sealed bytes: MAGIC, key id length, key id, 12-byte IV, 16-byte tag, ciphertext. */
const MAGIC = Buffer.from('AESG1');

export function parseKeyRing(spec: string): KeyRing {
  const keys = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf(':');
      const id = entry.slice(0, at);
      const key = Buffer.from(entry.slice(at + 1), 'base64');
      if (at < 1 || id.length > 64 || key.length !== 32) throw new Error('PAYLOAD_ENCRYPTION_KEYS entries are kid:base64 of 32 bytes, comma-separated, the active key first');
      return { id, key };
    });
  if (keys.length === 0) throw new Error('PAYLOAD_ENCRYPTION_KEYS names no key');
  return { active: keys[0], byId: new Map(keys.map((k) => [k.id, k.key])) };
}

let ring: KeyRing | undefined;

/** The process's key ring; without PAYLOAD_ENCRYPTION_KEYS, a development key derived from SIGNING_SECRET. */
export function keyRing(): KeyRing {
  if (ring) return ring;
  const configured = config().payloadEncryptionKeys;
  if (!configured) logger.warn('PAYLOAD_ENCRYPTION_KEYS is not set: payloads are sealed with a development key derived from SIGNING_SECRET; set a key ring in production');
  ring = parseKeyRing(configured ?? `dev:${createHash('sha256').update(`payload-encryption:${config().signingSecret}`).digest('base64')}`);
  return ring;
}

export function seal(plain: Uint8Array, keys: KeyRing = keyRing()): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keys.active.key, iv);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  const id = Buffer.from(keys.active.id);
  return Buffer.concat([MAGIC, Buffer.from([id.length]), id, iv, cipher.getAuthTag(), body]);
}

export function isSealed(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.subarray(0, MAGIC.length)).equals(MAGIC);
}

/** The id of the key that sealed these bytes; undefined for bytes written before sealing existed. */
export function sealedKeyId(bytes: Uint8Array): string | undefined {
  const buf = Buffer.from(bytes);
  if (!isSealed(buf)) return undefined;
  const at = MAGIC.length;
  return buf.subarray(at + 1, at + 1 + buf[at]).toString();
}

/** The plaintext of sealed bytes; bytes written before sealing existed pass through unchanged. */
export function open(bytes: Uint8Array, keys: KeyRing = keyRing()): Buffer {
  const buf = Buffer.from(bytes);
  if (!isSealed(buf)) return buf;
  let at = MAGIC.length;
  const idLength = buf[at++];
  const id = buf.subarray(at, (at += idLength)).toString();
  const key = keys.byId.get(id);
  if (!key) throw new Error(`sealed with key "${id}", which PAYLOAD_ENCRYPTION_KEYS no longer holds`);
  const iv = buf.subarray(at, (at += 12));
  const tag = buf.subarray(at, (at += 16));
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(buf.subarray(at)), decipher.final()]);
}

/**
 * Names the active key without revealing it: its id and a hash of its bytes (the development key's id
 * is `dev` whatever SIGNING_SECRET it comes from). What a Schedule was sealed with is recorded as this.
 */
export function activeKeyFingerprint(keys: KeyRing = keyRing()): string {
  return `${keys.active.id}:${createHash('sha256').update(keys.active.key).digest('hex').slice(0, 16)}`;
}
