import { isSealed, keyRing, open, seal, sealedKeyId, type KeyRing } from '../infra/encryption';
import { MAX_PREVIOUS_SECRETS, type EndpointStatus, type EndpointView } from '../domain/webhooks';
import { sql, statement, type Sql } from './sql';

/**
 * A partner's webhook endpoints. Secrets are sealed at rest (AES-256-GCM, the payload codec's key
 * ring): the service must sign with them, so they cannot be stored as hashes the way keys are.
 */
export interface EndpointRow extends EndpointView {
  id: number;
  partnerId: number;
}

const COLUMNS = `id, public_id AS "publicId", partner_id AS "partnerId", url, status, api_version AS "apiVersion",
                 enabled_events AS "enabledEvents", permitted_events AS "permittedEvents", description, secret_hint AS "secretHint",
                 (SELECT max((p->>'until')::timestamptz) FROM jsonb_array_elements(previous_secrets) p WHERE (p->>'until')::timestamptz > now()) AS "previousSecretUntil",
                 disabled_reason AS "disabledReason", created_at AS "createdAt"`;

const INSERT = statement(
  `INSERT INTO webhook_endpoints (public_id, partner_id, url, description, api_version, enabled_events, permitted_events, created_by_key, secret, secret_hint)
   SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE partner_id = $2 AND deleted_at IS NULL) < $11
   RETURNING ${COLUMNS}`,
);
const LIST = statement(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE partner_id = $1 AND deleted_at IS NULL ORDER BY id`);
const FIND = statement(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE public_id = $1 AND partner_id = $2 AND deleted_at IS NULL`);
const UPDATE = statement(
  `UPDATE webhook_endpoints
      SET enabled_events = COALESCE($3, enabled_events), description = COALESCE($4, description),
          status = COALESCE($5, status), updated_at = now(),
          -- re-enabling starts a fresh failure window
          failing_since = CASE WHEN $5 = 'active' THEN NULL ELSE failing_since END,
          disabled_reason = CASE WHEN $5 = 'active' THEN NULL WHEN $5 = 'disabled' AND status = 'active' THEN 'disabled by the partner' ELSE disabled_reason END
    WHERE public_id = $1 AND partner_id = $2 AND deleted_at IS NULL
   RETURNING ${COLUMNS}`,
);
const DELETE = statement(`UPDATE webhook_endpoints SET deleted_at = now() WHERE public_id = $1 AND partner_id = $2 AND deleted_at IS NULL`);
// The current secret joins those still signing, until $3; expired ones are dropped, and beyond the
// newest few so are the rest (each signs every delivery: a header must not grow without bound).
const ROTATE = statement(
  `UPDATE webhook_endpoints
      SET previous_secrets = (SELECT COALESCE(jsonb_agg(p), '[]'::jsonb)
                                FROM (SELECT p FROM jsonb_array_elements(previous_secrets) p WHERE (p->>'until')::timestamptz > $6
                                       ORDER BY (p->>'until')::timestamptz DESC LIMIT ${MAX_PREVIOUS_SECRETS - 1}) kept)
                             || jsonb_build_array(jsonb_build_object('secret', encode(secret, 'base64'), 'until', $3::timestamptz)),
          secret = $4, secret_hint = $5, updated_at = now()
    WHERE public_id = $1 AND partner_id = $2 AND deleted_at IS NULL
   RETURNING ${COLUMNS}`,
);

export interface NewEndpoint {
  publicId: string;
  partnerId: number;
  url: string;
  description: string;
  apiVersion: string;
  enabledEvents: string[];
  permittedEvents: string[];
  createdByKey: number;
  secret: string;
  secretHint: string;
}

/** Undefined when the partner already has `max` endpoints. */
export async function insertEndpoint(e: NewEndpoint, max: number, on: Sql = sql): Promise<EndpointRow | undefined> {
  const [row] = await on.rows<EndpointRow>(INSERT, [
    e.publicId, e.partnerId, e.url, e.description, e.apiVersion, e.enabledEvents, e.permittedEvents, e.createdByKey, seal(Buffer.from(e.secret)), e.secretHint, max,
  ]);
  return row;
}

export function listEndpoints(partnerId: number, on: Sql = sql): Promise<EndpointRow[]> {
  return on.rows<EndpointRow>(LIST, [partnerId]);
}

/** The partner's endpoint; undefined for a missing one and another partner's alike. */
export async function findEndpoint(partnerId: number, publicId: string, on: Sql = sql): Promise<EndpointRow | undefined> {
  const [row] = await on.rows<EndpointRow>(FIND, [publicId, partnerId]);
  return row;
}

export async function updateEndpoint(
  partnerId: number,
  publicId: string,
  change: { enabledEvents?: string[]; description?: string; status?: EndpointStatus },
  on: Sql = sql,
): Promise<EndpointRow | undefined> {
  const [row] = await on.rows<EndpointRow>(UPDATE, [publicId, partnerId, change.enabledEvents ?? null, change.description ?? null, change.status ?? null]);
  return row;
}

/** Removes the endpoint from the partner's view; its deliveries stay listed. */
export async function deleteEndpoint(partnerId: number, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(DELETE, [publicId, partnerId])) === 1;
}

/**
 * A new secret signs from now on; the current one keeps signing until `previousUntil`, as do earlier
 * ones within their own 24 hours (rotating twice in a day drops no secret early).
 */
export async function rotateSecret(partnerId: number, publicId: string, secret: string, hint: string, at: number, previousUntil: Date, on: Sql = sql): Promise<EndpointRow | undefined> {
  const [row] = await on.rows<EndpointRow>(ROTATE, [publicId, partnerId, previousUntil, seal(Buffer.from(secret)), hint, new Date(at)]);
  return row;
}

export interface SealedSecrets {
  secret: Buffer;
  previous_secrets: { secret: string; until: string }[];
}

const SEALED_PAGE = statement('SELECT id, public_id, secret, previous_secrets FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2');
// Only if unchanged since it was read: a rotation meanwhile wrote secrets sealed with the active key already.
const RESEALED = statement('UPDATE webhook_endpoints SET secret = $2, previous_secrets = $3 WHERE id = $1 AND secret = $4');

/**
 * Re-seals every endpoint's secrets that a key other than the active one sealed, under the active
 * one, so that the older keys can leave the ring: what was re-sealed, the endpoints whose current
 * secret no key of the ring opens (their deliveries cannot be signed until that key is back), and
 * those that lost a rotated-out secret no key opens (dropped: it could sign nothing anyway, and the
 * current one goes on signing).
 */
export async function resealEndpointSecrets(keys: KeyRing = keyRing(), on: Sql = sql): Promise<{ resealed: number; unopenable: string[]; lostPrevious: string[] }> {
  const current = (bytes: Uint8Array) => !isSealed(bytes) || sealedKeyId(bytes) === keys.active.id;
  const outcome = { resealed: 0, unopenable: [] as string[], lostPrevious: [] as string[] };
  for (let after = 0; ; ) {
    const rows = await on.rows<SealedSecrets & { id: number; public_id: string }>(SEALED_PAGE, [after, 500]);
    if (rows.length === 0) return outcome;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      // Secrets rotated out whose 24 hours are over sign nothing again: they go, whatever sealed them.
      const live = row.previous_secrets.filter((p) => Date.parse(p.until) > Date.now());
      if (current(row.secret) && live.length === row.previous_secrets.length && live.every((p) => current(Buffer.from(p.secret, 'base64')))) continue;
      const secret = openedOrUndefined(row.secret, keys);
      if (!secret) {
        outcome.unopenable.push(row.public_id);
        continue;
      }
      const previous = live.flatMap((p) => {
        const plain = openedOrUndefined(Buffer.from(p.secret, 'base64'), keys);
        return plain ? [{ ...p, secret: seal(plain, keys).toString('base64') }] : [];
      });
      if (previous.length < live.length) outcome.lostPrevious.push(row.public_id);
      outcome.resealed += await on.rowCount(RESEALED, [row.id, seal(secret, keys), JSON.stringify(previous), row.secret]);
    }
  }
}

function openedOrUndefined(bytes: Uint8Array, keys: KeyRing = keyRing()): Buffer | undefined {
  try {
    return open(bytes, keys);
  } catch {
    return undefined;
  }
}

/**
 * The secrets that sign at `at`: the current one, and each rotated-out one within its 24 hours.
 * The current one must open (it throws otherwise: nothing the receiver expects could sign). A
 * rotated-out one that no key of the ring opens (its key left the ring, and the endpoint's secret
 * was rotated as the remedy) cannot sign: it is left out and named in `lost` by the time it stops
 * signing, so that the caller can say so, and the delivery is signed with the rest.
 */
export function signingSecrets(row: SealedSecrets, at: number): { secrets: string[]; lost: string[] } {
  const secrets = [open(row.secret).toString('utf8')];
  const lost: string[] = [];
  for (const p of row.previous_secrets.filter((p) => Date.parse(p.until) > at)) {
    const plain = openedOrUndefined(Buffer.from(p.secret, 'base64'));
    if (plain) secrets.push(plain.toString('utf8'));
    else lost.push(p.until);
  }
  return { secrets, lost };
}
