import { createECDH, hkdfSync } from 'node:crypto';
import { config } from '../../infra/config';

/**
 * The authorization server's keys, derived from SIGNING_SECRET: every API instance and every restart
 * derives the same ones, so what one instance signs another verifies, and nothing is stored.
 * Rotating SIGNING_SECRET rotates them (opaque access and refresh tokens do not depend on them).
 */
function derive(purpose: string, bytes: number): Buffer {
  return Buffer.from(hkdfSync('sha256', config().signingSecret, 'agent-execution-service', `oauth ${purpose}`, bytes));
}

/** The ES256 key signing ID tokens (the `openid` scope), as a private JWK. */
export function signingJwk(): Record<string, string> {
  // A 32-byte scalar is below the P-256 group order except with negligible probability; ECDH rejects it otherwise.
  const d = derive('signing key P-256', 32);
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 0x04 || x || y
  const b64 = (b: Buffer) => b.toString('base64url');
  const x = b64(point.subarray(1, 33));
  return { kty: 'EC', crv: 'P-256', d: b64(d), x, y: b64(point.subarray(33, 65)), use: 'sig', alg: 'ES256', kid: `es256-${x.slice(0, 8)}` };
}

/** Keys signing the provider's cookies (interaction, resume, session). */
export function cookieKeys(): string[] {
  return [derive('cookie key', 32).toString('base64url')];
}
