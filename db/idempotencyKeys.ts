import { sql, statement, type Sql } from './sql';

/**
 * The idempotency_keys table: one row per (endpoint, environment, credential, key), claimed in flight,
 * then holding the stored answer. Times are the service's clock (passed in), not the database's, so
 * the 24-hour and 15-minute rules are testable.
 */

export interface KeyRow {
  fingerprint: string;
  state: 'in_flight' | 'completed';
  claimToken: string;
  kind: 'body' | 'stream' | null;
  runPublicId: string | null;
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  responseBody: Buffer | null;
}

// A new key is inserted; an expired row (a finished request past its replay window, or a claim past
// its release time) is taken over in place. Row locking under ON CONFLICT makes exactly one of any
// number of concurrent callers the owner.
const CLAIM = statement(
  `INSERT INTO idempotency_keys AS k (scope_hash, endpoint, api_key_id, member_id, fingerprint, state, claim_token, created_at, expires_at)
   VALUES ($1, $2, $3, $8, $4, 'in_flight', $5, $6, $7)
   ON CONFLICT (scope_hash) DO UPDATE
     SET fingerprint = EXCLUDED.fingerprint, state = 'in_flight', claim_token = EXCLUDED.claim_token, kind = NULL,
         run_public_id = NULL, response_status = NULL, response_headers = NULL, response_body = NULL,
         created_at = EXCLUDED.created_at, completed_at = NULL, expires_at = EXCLUDED.expires_at
     WHERE k.expires_at <= $6
   RETURNING claim_token AS "claimToken"`,
);

/** Claims the key with `token`; true when this caller owns it now. */
export async function claimKey(
  c: { scopeHash: string; endpoint: string; apiKeyKey: number | null; memberKey: number | null; fingerprint: string; token: string; at: Date; releaseAt: Date },
  on: Sql = sql,
): Promise<boolean> {
  const [row] = await on.rows<{ claimToken: string }>(CLAIM, [c.scopeHash, c.endpoint, c.apiKeyKey, c.fingerprint, c.token, c.at, c.releaseAt, c.memberKey]);
  return row?.claimToken === c.token;
}

const LIVE = statement(
  `SELECT fingerprint, state, claim_token AS "claimToken", kind, run_public_id AS "runPublicId", response_status AS "responseStatus",
          response_headers AS "responseHeaders", response_body AS "responseBody"
     FROM idempotency_keys WHERE scope_hash = $1 AND expires_at > $2`,
);

/** The key's row unless it has expired. */
export async function findLiveKey(scopeHash: string, at: Date, on: Sql = sql): Promise<KeyRow | undefined> {
  const [row] = await on.rows<KeyRow>(LIVE, [scopeHash, at]);
  return row;
}

const BEGIN = statement(`UPDATE idempotency_keys SET run_public_id = $3, expires_at = $4 WHERE scope_hash = $1 AND claim_token = $2 AND state = 'in_flight'`);

/** Records the recovery point of an owned claim; false when the claim is no longer this owner's. */
export async function recordRecoveryPoint(scopeHash: string, token: string, resourceId: string, keepUntil: Date, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(BEGIN, [scopeHash, token, resourceId, keepUntil])) === 1;
}

const COMPLETE = statement(
  `UPDATE idempotency_keys
      SET state = 'completed', kind = $3, run_public_id = $4, response_status = $5, response_headers = $6, response_body = $7,
          completed_at = $8, expires_at = $9
    WHERE scope_hash = $1 AND claim_token = $2 AND state = 'in_flight'`,
);

/** Stores the answer of an owned claim; the first of several owners (an original and a resumed retry) to store wins. */
export async function completeKey(
  scopeHash: string,
  token: string,
  r: { kind: 'body' | 'stream'; runId: string | null; status: number; headers: Record<string, string>; body: Buffer; at: Date; replayUntil: Date },
  on: Sql = sql,
): Promise<void> {
  await on.rows(COMPLETE, [scopeHash, token, r.kind, r.runId, r.status, JSON.stringify(r.headers), r.body, r.at, r.replayUntil]);
}

const RELEASE = statement('DELETE FROM idempotency_keys WHERE scope_hash = $1 AND claim_token = $2 AND run_public_id IS NULL');

/** Frees an owned claim for a retry, only while it has no recovery point. */
export async function releaseKey(scopeHash: string, token: string, on: Sql = sql): Promise<void> {
  await on.rows(RELEASE, [scopeHash, token]);
}

const PURGE = statement(
  `DELETE FROM idempotency_keys WHERE id IN (
     SELECT id FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
);

/** Deletes up to `batch` expired rows; returns how many. */
export async function purgeExpiredKeys(at: Date, batch: number, on: Sql = sql): Promise<number> {
  return on.rowCount(PURGE, [at, batch]);
}
