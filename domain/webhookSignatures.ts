import { createHmac, randomBytes } from 'node:crypto';

/**
 * Endpoint secrets and the two signature schemes every delivery carries, both keyed by one secret:
 *  - `X-Service-Signature: t=<unix s>,v1=<hex>`: HMAC-SHA256 keyed with the whole secret string over
 *    `<t>.<body>`, exactly Stripe's scheme, so `stripe.webhooks.signature.verifyHeader` verifies it;
 *  - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`):
 *    HMAC-SHA256 keyed with the base64-decoded part after `whsec_`, over `<id>.<t>.<body>`, so the
 *    stock `standardwebhooks` libraries verify it.
 * During a rotation both the new and the old secret sign: one value of each per scheme.
 */

const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` and 32 random bytes in base64 (the Standard Webhooks form). */
export function mintSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** What the endpoint record shows of its secret. */
export function secretHint(secret: string): string {
  return secret.slice(-4);
}

export interface SignedDelivery {
  /** The delivery id: Standard Webhooks' `webhook-id`, stable across a delivery's attempts. */
  id: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  body: string;
}

export function serviceSignature(secrets: readonly string[], d: SignedDelivery): string {
  const values = secrets.map((s) => `v1=${createHmac('sha256', s).update(`${d.timestamp}.${d.body}`).digest('hex')}`);
  return [`t=${d.timestamp}`, ...values].join(',');
}

export function standardSignature(secrets: readonly string[], d: SignedDelivery): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', Buffer.from(s.slice(SECRET_PREFIX.length), 'base64')).update(`${d.id}.${d.timestamp}.${d.body}`).digest('base64')}`)
    .join(' ');
}
