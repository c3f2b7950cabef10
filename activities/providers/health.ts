import type Redis from 'ioredis';
import { redis } from '../../infra/redis';
import { logger } from '../../infra/logger';

/**
 * Each model provider's health, shared by every worker in Redis (one hash per provider), so a
 * provider's `Retry-After` or outage is honoured by the whole service rather than rediscovered by each
 * run (docs/operations.md, "Model providers"):
 *  - a cooldown: a 429 or 503 with Retry-After stops calls to the provider for the time it asks;
 *  - a circuit: CIRCUIT_FAILURES failures in a row (5xx, 429 without Retry-After, timeouts, refused
 *    connections) stop calls for CIRCUIT_FIRST_MS, twice as long each time it opens again, up to
 *    CIRCUIT_MAX_MS. Only for declared providers (MODEL_PROVIDERS): the one provider of
 *    MODEL_BASE_URL keeps each run's own retries, as before, since its runs have nowhere else to go;
 *  - after either, one call is let through as a probe (for PROBE_LEASE_MS, after which another may
 *    be); its answer ends the cooldown or closes the circuit, and only then do the rest go.
 * Times are Redis's clock, so workers on different machines agree. Redis being unreachable never
 * stops a call: each step waits at most REDIS_WAIT_MS, and without an answer the provider is taken
 * to be healthy (as it was before this existed).
 */
const CIRCUIT_FAILURES = 3;
/** Short: a provider's blip should cost a run a second or two, not its deadline. */
const CIRCUIT_FIRST_MS = 2_000;
const CIRCUIT_MAX_MS = 60_000;
/** How long a probe holds the provider for itself; a probe that is still answering then lets one more through. */
const PROBE_LEASE_MS = 5_000;
const REDIS_WAIT_MS = 250;
/** A count of failures in a row is forgotten after this long without another: a failure an hour is not an outage. */
const FAILURES_FORGOTTEN_MS = 60_000;
/** A cooldown's or circuit's record is kept this long past its end, for its probe. */
const STATE_KEPT_MS = 3_600_000;

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Returns {verdict, ms, reason, fails}: go (fails so far), probe, wait (ms until the cooldown or circuit ends), probing (another call is the probe). */
const ADMIT = `${NOW}
local s = redis.call('HMGET', KEYS[1], 'until', 'reason', 'probe', 'fails')
local untilAt = tonumber(s[1])
if not untilAt then return {'go', 0, '', tonumber(s[4]) or 0} end
if now < untilAt then return {'wait', untilAt - now, s[2], 0} end
local probe = tonumber(s[3])
if probe and now < probe then return {'probing', probe - now, s[2], 0} end
redis.call('HSET', KEYS[1], 'probe', now + tonumber(ARGV[1]))
return {'probe', 0, s[2], 0}`;

/** ARGV: probe (1/0). Returns the reason ended (the probe answered after its cooldown or circuit), or ''. */
const ANSWERED = `${NOW}
local s = redis.call('HMGET', KEYS[1], 'until', 'reason')
local untilAt = tonumber(s[1])
if ARGV[1] == '1' and untilAt and untilAt <= now then redis.call('DEL', KEYS[1]) return s[2] end
if ARGV[1] == '1' then redis.call('HDEL', KEYS[1], 'probe') end
if not untilAt then redis.call('HDEL', KEYS[1], 'fails') end
return ''`;

/**
 * ARGV: retryAfterMs (-1: none), circuit (1/0), probe (1/0), failures, firstMs, maxMs, forgottenMs, keptMs.
 * Returns {entered reason or '', ms until it ends (0: none)}.
 */
const FAILED = `${NOW}
local untilAt = tonumber(redis.call('HGET', KEYS[1], 'until'))
local fresh = untilAt == nil
local ra = tonumber(ARGV[1])
local kept = tonumber(ARGV[8])
if ra >= 0 then
  local ends = now + ra
  if untilAt and untilAt > ends then ends = untilAt end
  redis.call('HSET', KEYS[1], 'until', ends, 'reason', 'cooldown')
  redis.call('HDEL', KEYS[1], 'probe')
  redis.call('PEXPIRE', KEYS[1], ends - now + kept)
  return {fresh and 'cooldown' or '', ends - now}
end
if ARGV[2] ~= '1' then
  if ARGV[3] == '1' then redis.call('HDEL', KEYS[1], 'probe') end
  return {'', 0}
end
if untilAt and untilAt > now then return {'', untilAt - now} end
local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
if ARGV[3] ~= '1' and fails < tonumber(ARGV[4]) then
  if fresh then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[7])) end
  return {'', 0}
end
local opens = redis.call('HINCRBY', KEYS[1], 'opens', 1)
local ms = math.min(tonumber(ARGV[5]) * 2 ^ (opens - 1), tonumber(ARGV[6]))
redis.call('HSET', KEYS[1], 'until', now + ms, 'reason', 'circuit', 'fails', 0)
redis.call('HDEL', KEYS[1], 'probe')
redis.call('PEXPIRE', KEYS[1], ms + kept)
return {fresh and 'circuit' or '', ms}`;

type Scripted = Redis & {
  aesProviderAdmit(keys: 1, key: string, lease: number): Promise<[string, number, string, number]>;
  aesProviderAnswered(keys: 1, key: string, probe: string): Promise<string>;
  aesProviderFailed(keys: 1, key: string, ...args: (string | number)[]): Promise<[string, number]>;
};

function scripted(client: Redis): Scripted {
  if (!('aesProviderAdmit' in client)) {
    client.defineCommand('aesProviderAdmit', { lua: ADMIT });
    client.defineCommand('aesProviderAnswered', { lua: ANSWERED });
    client.defineCommand('aesProviderFailed', { lua: FAILED });
  }
  return client as unknown as Scripted;
}

const keyOf = (provider: string) => `aes:model-provider:${provider}`;

/** Redis's answer, or `fallback` when it is not there within REDIS_WAIT_MS (an outage never stops a model call). */
async function atMostBriefly<T>(ask: () => Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), REDIS_WAIT_MS)));
  try {
    return await Promise.race([ask().catch(() => fallback), late]);
  } finally {
    clearTimeout(timer);
  }
}

export type ProviderState = 'ok' | 'cooldown' | 'circuit';

/** Whether a call may go to the provider now: `go` (as a probe, or with failures so far to clear on an answer), or wait `waitMs`. */
export type Admission = { go: true; probe: boolean; fails: number; state: ProviderState } | { go: false; waitMs: number; state: ProviderState; probing: boolean };

const GO: Admission = { go: true, probe: false, fails: 0, state: 'ok' };

export async function admit(provider: string): Promise<Admission> {
  return atMostBriefly(async () => {
    const [verdict, ms, reason, fails] = await scripted(redis()).aesProviderAdmit(1, keyOf(provider), PROBE_LEASE_MS);
    const state: ProviderState = reason === 'circuit' ? 'circuit' : reason === 'cooldown' ? 'cooldown' : 'ok';
    if (verdict === 'go') return { go: true, probe: false, fails, state };
    if (verdict === 'probe') return { go: true, probe: true, fails: 0, state };
    return { go: false, waitMs: Math.max(1, ms), state, probing: verdict === 'probing' };
  }, GO);
}

/** The provider answered (a reply, or a 4xx: it is up). A probe's answer ends its cooldown or closes its circuit: logged once, by the worker whose probe it was. */
export async function answered(provider: string, admission: Admission & { go: true }): Promise<void> {
  if (!admission.probe && admission.fails === 0) return;
  const ended = await atMostBriefly(() => scripted(redis()).aesProviderAnswered(1, keyOf(provider), admission.probe ? '1' : '0'), '');
  if (ended) logger.info({ provider, state: ended }, ended === 'circuit' ? 'model provider circuit closed: its probe was answered' : 'model provider cooldown ended: its probe was answered');
}

/**
 * The provider failed a call. A Retry-After starts (or lengthens) a cooldown; any other failure of a
 * class that counts (`counts`) adds to its failures in a row, and opens its circuit at
 * CIRCUIT_FAILURES (a failed probe at once). The worker whose failure started the cooldown or opened
 * the circuit logs it, once. Returns the state it entered, if it did.
 */
export async function failed(provider: string, f: { retryAfterMs?: number; counts: boolean; circuit: boolean; probe: boolean }): Promise<ProviderState | undefined> {
  const retryAfter = f.retryAfterMs === undefined ? -1 : Math.ceil(f.retryAfterMs);
  if (retryAfter < 0 && !f.probe && !(f.counts && f.circuit)) return undefined;
  const [entered, ms] = await atMostBriefly(
    () => scripted(redis()).aesProviderFailed(1, keyOf(provider), retryAfter, f.counts && f.circuit ? '1' : '0', f.probe ? '1' : '0', CIRCUIT_FAILURES, CIRCUIT_FIRST_MS, CIRCUIT_MAX_MS, FAILURES_FORGOTTEN_MS, STATE_KEPT_MS),
    ['', 0] as [string, number],
  );
  if (entered === 'cooldown') logger.warn({ provider, retry_after_ms: retryAfter, for_ms: ms }, 'model provider cooling down: it asked for a pause (Retry-After); its calls wait or go to fallbacks');
  if (entered === 'circuit') logger.warn({ provider, for_ms: ms }, 'model provider circuit opened: it failed repeatedly; its calls wait or go to fallbacks');
  return entered === 'cooldown' || entered === 'circuit' ? entered : undefined;
}

/** A probe that ended without the provider's answer (cancelled, the deadline): another call may probe at once. */
export async function released(provider: string, admission: Admission & { go: true }): Promise<void> {
  if (!admission.probe) return;
  await atMostBriefly(() => redis().hdel(keyOf(provider), 'probe'), 0);
}
