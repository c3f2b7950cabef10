import { createHash, randomUUID } from 'node:crypto';
import { now } from '../../domain/clock';
import { open, seal } from '../../infra/encryption';
import { claimKey, completeKey, findLiveKey, purgeExpiredKeys, recordRecoveryPoint, releaseKey } from '../../db/idempotencyKeys';

/** A finished request replays for this long (spec: 24 hours). */
export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A claim whose request never finished is released after this long (spec: 15 minutes). */
export const CLAIM_TIMEOUT_MS = 15 * 60 * 1000;
/** Expired rows are purged by the claims themselves, at most this often per process. */
const PURGE_EVERY_MS = 60 * 1000;
const PURGE_BATCH = 500;

/** The caller identity a key is scoped by: endpoint, environment and credential (spec: never the workspace alone). */
export interface IdempotencyScope {
  endpoint: string;
  environment: string;
  /** The credential's database key, a key's or a signed-in member's (for the record), and public id (for the scope). */
  apiKeyKey: number | null;
  memberKey: number | null;
  apiKeyId: string;
  key: string;
}

export interface StoredResponse {
  kind: 'body' | 'stream';
  status: number;
  /** The response headers that are part of the answer (content type, Retry-After, ...). */
  headers: Record<string, string>;
  body: Buffer;
  runId: string | null;
}

/**
 * A claimed key. Before the request begins anything durable (a workflow), it records what it is
 * about to begin with begin(): Stripe's recovery point. From then on the claim is never released,
 * and a retry of the same request resumes: it is told what was begun and attaches to it.
 */
export interface OwnedClaim {
  outcome: 'claimed';
  /** Set when an earlier attempt of this request recorded a recovery point: attach to it. */
  resumed?: string;
  begin(resourceId: string): Promise<void>;
  complete(response: StoredResponse): Promise<void>;
  /** Frees the key for a retry, only while nothing was begun. */
  release(): Promise<void>;
}

export type Claim = OwnedClaim | { outcome: 'replay'; response: StoredResponse } | { outcome: 'conflict'; reason: 'different_request' | 'in_flight' };

const sha256 = (...parts: (string | Buffer)[]) => {
  const hash = createHash('sha256');
  // Length-prefixed, so no two different part lists hash alike.
  for (const part of parts) hash.update(`${Buffer.byteLength(part)}:`).update(part);
  return hash.digest('hex');
};

export const scopeHashOf = (s: IdempotencyScope) => sha256(s.endpoint, s.environment, s.apiKeyId, s.key);

/** What "the same request" means: method, path with query, and the raw body bytes. */
export const fingerprintOf = (method: string, url: string, rawBody: Buffer) => sha256(method, url, rawBody);

let lastPurge = Number.NEGATIVE_INFINITY;

/** Deletes up to a batch of expired rows (finished past replay, or claims past release); returns how many. */
export function purgeExpired(at = now()): Promise<number> {
  return purgeExpiredKeys(new Date(at), PURGE_BATCH);
}

async function purgeNowAndThen(at: number): Promise<void> {
  if (at - lastPurge < PURGE_EVERY_MS) return;
  lastPurge = at;
  await purgeExpired(at);
}

function owned(scopeHash: string, token: string, resumed?: string): OwnedClaim {
  return {
    outcome: 'claimed',
    resumed,
    async begin(resourceId) {
      // Kept for the whole replay window: a retry within it attaches instead of beginning again.
      const recorded = await recordRecoveryPoint(scopeHash, token, resourceId, new Date(now() + REPLAY_WINDOW_MS));
      if (!recorded) throw new Error('the idempotency claim was lost before the request began its work');
    },
    async complete(response) {
      const at = now();
      // The stored answer is the one copy of an exchange the spec requires (24 hours): kept sealed.
      await completeKey(scopeHash, token, { ...response, body: seal(response.body), at: new Date(at), replayUntil: new Date(at + REPLAY_WINDOW_MS) });
    },
    release: () => releaseKey(scopeHash, token),
  };
}

/**
 * The idempotency decision for one request: the caller owns the key now (anew, or resuming what an
 * earlier attempt began), or replays the stored response, or is refused because the key is in use by
 * a different request or by one that has not begun anything yet.
 */
export async function claim(scope: IdempotencyScope, fingerprint: string): Promise<Claim> {
  const scopeHash = scopeHashOf(scope);
  const at = now();
  await purgeNowAndThen(at);
  // The existing row can vanish between the two statements (released or purged): then claim again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const token = randomUUID();
    const claimed = await claimKey({ scopeHash, endpoint: scope.endpoint, apiKeyKey: scope.apiKeyKey, memberKey: scope.memberKey, fingerprint, token, at: new Date(at), releaseAt: new Date(at + CLAIM_TIMEOUT_MS) });
    if (claimed) return owned(scopeHash, token);
    const row = await findLiveKey(scopeHash, new Date(at));
    if (!row) continue;
    if (row.fingerprint !== fingerprint) return { outcome: 'conflict', reason: 'different_request' };
    if (row.state === 'in_flight') return row.runPublicId ? owned(scopeHash, row.claimToken, row.runPublicId) : { outcome: 'conflict', reason: 'in_flight' };
    return {
      outcome: 'replay',
      response: { kind: row.kind!, status: row.responseStatus!, headers: row.responseHeaders ?? {}, body: open(row.responseBody ?? Buffer.alloc(0)), runId: row.runPublicId },
    };
  }
  return { outcome: 'conflict', reason: 'in_flight' };
}
