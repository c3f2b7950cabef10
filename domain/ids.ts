import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { decodeTime, encodeTime, monotonicFactory } from 'ulid';

// ulid draws one random number per character; a crypto call for each was a measurable share of a
// cheap request, so the same cryptographic randomness is drawn from a buffer refilled 4 KiB at a time.
const pool = Buffer.alloc(4096);
let drawn = pool.length;
function pooledRandom(): number {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  return pool[drawn++] / 256;
}

const ulid = monotonicFactory(pooledRandom);

/** Public id prefixes: database keys never leave the service, these do. */
export const ID_PREFIX = {
  run: 'run_',
  conversation: 'conv_',
  message: 'msg_',
  job: 'job_',
  document: 'doc_',
  ingestion: 'ing_',
  report: 'rpt_',
  extraction: 'ext_',
  event: 'evt_',
  delivery: 'dlv_',
  webhookEndpoint: 'we_',
  recovery: 'rcv_',
  request: 'req_',
  workspace: 'ws_',
  partner: 'ptn_',
  agent: 'agt_',
  key: 'key_',
  log: 'log_',
  collection: 'col_',
  chunk: 'chk_',
  member: 'mem_',
  schedule: 'sch_',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function mintId(kind: IdKind): string {
  return ID_PREFIX[kind] + ulid().toLowerCase();
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * An id of this kind derived from `name` rather than drawn: the same name always gives the same id,
 * a ULID whose time is `at` (so it sorts with minted ids) and whose randomness is the name's hash.
 */
export function derivedId(kind: IdKind, name: string, at: number): string {
  const hash = createHash('sha256').update(name).digest();
  let random = '';
  for (let i = 0; i < 16; i++) random += CROCKFORD[hash[i] & 31];
  return ID_PREFIX[kind] + encodeTime(at, 10).toLowerCase() + random;
}

/** When a public id was minted (its ULID's time), in whole seconds since the epoch: what OpenAI's wire calls `created`. */
export function mintedAtSeconds(publicId: string): number {
  return Math.floor(decodeTime(publicId.slice(publicId.indexOf('_') + 1).toUpperCase()) / 1000);
}

/** W3C trace id: 32 lowercase hex characters, never all zero. */
export function mintTraceId(): string {
  return randomBytes(16).toString('hex');
}

export function hasPrefix(kind: IdKind, value: string): boolean {
  return value.startsWith(ID_PREFIX[kind]);
}

/** Whether the value is a public id of this kind as mintId writes it (prefix, then a lowercase ULID). */
export function isPublicId(kind: IdKind, value: string): boolean {
  return value.startsWith(ID_PREFIX[kind]) && /^[0-9a-hjkmnp-tv-z]{26}$/.test(value.slice(ID_PREFIX[kind].length));
}

/** What isPublicId() accepts, as a pattern (for the OpenAPI document). */
export const publicIdPattern = (kind: IdKind): string => `^${ID_PREFIX[kind]}[0-9a-hjkmnp-tv-z]{26}$`;
