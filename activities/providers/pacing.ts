import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { redis, subscriber } from '../../infra/redis';
import { logger } from '../../infra/logger';
import { pause } from './waiting';

/**
 * A provider's `max_concurrency` and `rpm` (MODEL_PROVIDERS), held by every worker together in Redis,
 * and shared fairly by workspaces (docs/operations.md, "Model providers"). Per provider:
 *  - `held`: the calls that have a slot, each with a lease its worker renews while the call runs, so
 *    a worker that dies gives its slots back when their leases end (LEASE_MS);
 *  - `queue`: the calls waiting for a slot, ordered by round, then arrival. A workspace's next call
 *    waits one round behind its last still waiting, and never earlier than the round being served: one
 *    workspace with 500 calls queued fills rounds r…r+499, another's single call joins round r, so it
 *    goes after at most one call of the first (start-time fair queueing, one queue, no key per workspace);
 *  - `alive`: when each waiting call last asked; one whose worker died is dropped when it reaches the head;
 *  - `state`: the round being served, the arrival count, each waiting workspace's last round, and the
 *    rpm bucket (refilled at rpm/60 a second, holding at most one second's share: calls are paced, not burst).
 * A slot that frees is handed at once, in the same script, to the next call in that order, and
 * published on the provider's channel so its waiting worker goes at once; a waiting call also asks
 * again every POLL_MS (a message lost, the rpm bucket refilling). Why Redis and not a Temporal task
 * queue per provider: a queue's rate limit is per queue, not per workspace, so it cannot be fair
 * between workspaces; a slot here costs a provider with limits two round trips a call (take,
 * give back) and one each LEASE_MS/3 of a long call, and a provider without limits none at all.
 * Redis unreachable never stops a call: without an answer within REDIS_WAIT_MS the call goes, unpaced.
 */
export const LEASE_MS = 30_000;
export const ALIVE_MS = 10_000;
const POLL_MS = 1_000;
const REDIS_WAIT_MS = 250;
/** A provider's queue and slots are forgotten this long after anyone last asked. */
const KEPT_MS = 600_000;

export interface Limits {
  maxConcurrency?: number;
  rpm?: number;
}

const CLOCK = `local function clock(given) if given >= 0 then return given end local t = redis.call('TIME') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end`;

/** Hands free slots to the calls at the head of the queue; returns them, and the ms until the rpm bucket holds a call (-1: not waiting on it). */
const GRANT = `${CLOCK}
local function grant(now, limit, rpm, lease)
  local granted, waitMs, steps = {}, -1, 0
  local tokens
  if rpm > 0 then
    local b = redis.call('HMGET', KEYS[4], 'tokens', 'at')
    local burst = math.max(1, math.floor(rpm / 60))
    tokens = math.min(burst, (tonumber(b[1]) or burst) + math.max(0, now - (tonumber(b[2]) or now)) * rpm / 60000)
  end
  while steps < 200 do
    steps = steps + 1
    if limit > 0 and redis.call('ZCARD', KEYS[2]) >= limit then break end
    local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    if #head == 0 then break end
    local m, round = head[1], tonumber(head[2])
    local alive = tonumber(redis.call('ZSCORE', KEYS[3], m))
    if alive and alive >= now then
      if rpm > 0 then
        if tokens < 1 then waitMs = math.ceil((1 - tokens) * 60000 / rpm) break end
        tokens = tokens - 1
      end
      redis.call('ZADD', KEYS[2], now + lease, m)
      redis.call('HSET', KEYS[4], 'vt', round)
      local share = 'r:' .. string.match(m, '^%d+|([^|]*)|')
      if tonumber(redis.call('HGET', KEYS[4], share)) == round then redis.call('HDEL', KEYS[4], share) end
      granted[#granted + 1] = m
    end
    redis.call('ZREM', KEYS[1], m)
    redis.call('ZREM', KEYS[3], m)
  end
  if rpm > 0 then redis.call('HSET', KEYS[4], 'tokens', tokens, 'at', now) end
  return granted, waitMs
end
local function granted(list, channel, kept)
  if #list > 0 then redis.call('PUBLISH', channel, table.concat(list, ' ')) end
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], kept) end
end`;

/**
 * KEYS: queue, held, alive, state. ARGV: member ('' the first time), share, ticket, limit (0: none),
 * rpm (0: none), leaseMs, aliveMs, now (-1: Redis's clock), channel, keptMs.
 * Returns {go|wait, member, ms until the rpm bucket refills (-1: until a slot frees)}.
 */
const TAKE = `${GRANT}
local now = clock(tonumber(ARGV[8]))
local member, share = ARGV[1], ARGV[2]
local limit, rpm, lease = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if member ~= '' and redis.call('ZSCORE', KEYS[2], member) then return {'go', member, 0} end
if member == '' then member = string.format('%015d|%s|%s', redis.call('HINCRBY', KEYS[4], 'seq', 1), share, ARGV[3]) end
if not redis.call('ZSCORE', KEYS[1], member) then
  local vt = tonumber(redis.call('HGET', KEYS[4], 'vt')) or 0
  local last = tonumber(redis.call('HGET', KEYS[4], 'r:' .. share))
  local round = last and math.max(vt, last + 1) or vt
  redis.call('HSET', KEYS[4], 'r:' .. share, round)
  redis.call('ZADD', KEYS[1], round, member)
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[7]), member)
local list, waitMs = grant(now, limit, rpm, lease)
local mine = redis.call('ZSCORE', KEYS[2], member)
local others = {}
for _, m in ipairs(list) do if m ~= member then others[#others + 1] = m end end
granted(others, ARGV[9], tonumber(ARGV[10]))
if mine then return {'go', member, 0} end
return {'wait', member, waitMs}`;

/** KEYS as TAKE's. ARGV: member, limit, rpm, leaseMs, now, channel, keptMs. Gives the slot back (or leaves the queue) and hands free slots on. */
const GIVE_BACK = `${GRANT}
local now = clock(tonumber(ARGV[5]))
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local list = grant(now, tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
granted(list, ARGV[6], tonumber(ARGV[7]))
return #list`;

/** KEYS[1]: held. ARGV: member, leaseMs. A call still running keeps its slot. */
const RENEW = `${CLOCK}
redis.call('ZADD', KEYS[1], clock(-1) + tonumber(ARGV[2]), ARGV[1])
return 1`;

type Scripted = Redis & {
  aesPacingTake(keys: 4, ...args: (string | number)[]): Promise<[string, string, number]>;
  aesPacingGiveBack(keys: 4, ...args: (string | number)[]): Promise<number>;
  aesPacingRenew(keys: 1, ...args: (string | number)[]): Promise<number>;
};

function scripted(client: Redis): Scripted {
  if (!('aesPacingTake' in client)) {
    client.defineCommand('aesPacingTake', { lua: TAKE });
    client.defineCommand('aesPacingGiveBack', { lua: GIVE_BACK });
    client.defineCommand('aesPacingRenew', { lua: RENEW });
  }
  return client as unknown as Scripted;
}

const prefix = (provider: string) => `aes:model-pacing:${provider}`;
const keysOf = (provider: string) => ['queue', 'held', 'alive', 'state'].map((k) => `${prefix(provider)}:${k}`);
const channelOf = (provider: string) => `${prefix(provider)}:granted`;

/**
 * The scripts themselves, one Redis round trip each. `now` is Redis's clock unless given: a test
 * gives its own, to step an rpm bucket without waiting on the wall clock.
 */
export const pacingScripts = {
  async take(provider: string, call: { member: string; share: string; ticket: string }, limits: Limits, now = -1): Promise<{ go: boolean; member: string; refillMs: number }> {
    const [verdict, member, refillMs] = await scripted(redis()).aesPacingTake(4, ...keysOf(provider), call.member, call.share, call.ticket, limits.maxConcurrency ?? 0, limits.rpm ?? 0, LEASE_MS, ALIVE_MS, now, channelOf(provider), KEPT_MS);
    return { go: verdict === 'go', member, refillMs };
  },
  async giveBack(provider: string, member: string, limits: Limits, now = -1): Promise<void> {
    await scripted(redis()).aesPacingGiveBack(4, ...keysOf(provider), member, limits.maxConcurrency ?? 0, limits.rpm ?? 0, LEASE_MS, now, channelOf(provider), KEPT_MS);
  },
  async renew(provider: string, member: string): Promise<void> {
    await scripted(redis()).aesPacingRenew(1, keysOf(provider)[1], member, LEASE_MS);
  },
};

/** Waiting calls of this process, by member: the provider's channel wakes one when another worker hands it a slot. */
const wakers = new Map<string, () => void>();
/** The subscriber connection heard on, and the providers' channels subscribed on it (a new connection, after closeRedis, starts afresh). */
let heard: { connection: Redis; providers: Set<string> } | undefined;

function hear(provider: string): void {
  const connection = subscriber();
  if (heard?.connection !== connection) {
    heard = { connection, providers: new Set() };
    connection.on('message', (channel: string, message: string) => {
      if (!channel.startsWith('aes:model-pacing:')) return;
      for (const member of message.split(' ')) wakers.get(member)?.();
    });
  }
  if (heard.providers.has(provider)) return;
  const { providers } = heard;
  providers.add(provider);
  connection.subscribe(channelOf(provider)).catch((err) => {
    providers.delete(provider);
    // Without it, a waiting call still asks every POLL_MS.
    logger.warn({ err: String(err), provider }, 'model provider slot handovers not heard');
  });
}

/** Redis's answer, or undefined when it is not there within REDIS_WAIT_MS. */
async function briefly<T>(ask: () => Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), REDIS_WAIT_MS)));
  try {
    return await Promise.race([ask().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Slot {
  /** Gives the slot back: on every path of the call (answer, failure, abort); safe to repeat. */
  release(): Promise<void>;
}

const FREE: Slot = { release: async () => undefined };

const limited = (limits: Limits) => limits.maxConcurrency !== undefined || limits.rpm !== undefined;

/**
 * A slot of the provider for one call, waited for (sending nothing) until `signal` stops the call,
 * which then leaves the queue and throws StoppedWaiting. `share` names whose turn the call takes (its
 * workspace), asked only when the provider has limits; `waiting` is called when the call starts to
 * wait, and what it returns when it stops (the metric of calls waiting, the run's timeline). A
 * provider without limits answers at once, with no round trip.
 */
export async function takeSlot(provider: string, limits: Limits, share: () => Promise<string>, signal: AbortSignal, waiting: () => () => void): Promise<Slot> {
  if (!limited(limits)) return FREE;
  const call = { member: '', share: await share(), ticket: randomUUID() };
  let waited: (() => void) | undefined;
  try {
    for (;;) {
      const answer = await briefly(() => pacingScripts.take(provider, call, limits));
      if (!answer) return FREE;
      call.member = answer.member;
      if (answer.go) return held(provider, call.member, limits);
      if (!waited) {
        waited = waiting();
        hear(provider);
      }
      const woken = new Promise<void>((resolve) => wakers.set(call.member, resolve));
      try {
        await pause(answer.refillMs >= 0 ? Math.min(answer.refillMs, POLL_MS) : POLL_MS, signal, woken);
      } finally {
        wakers.delete(call.member);
      }
    }
  } catch (err) {
    // Stopped while waiting: out of the queue, and any slot handed over meanwhile given back.
    if (call.member) await briefly(() => pacingScripts.giveBack(provider, call.member, limits));
    throw err;
  } finally {
    waited?.();
  }
}

/** A slot held: its lease renewed while the call runs, given back once. */
function held(provider: string, member: string, limits: Limits): Slot {
  const renewing = setInterval(() => void briefly(() => pacingScripts.renew(provider, member)), LEASE_MS / 3).unref();
  let given: Promise<void> | undefined;
  return {
    release() {
      clearInterval(renewing);
      given ??= briefly(() => pacingScripts.giveBack(provider, member, limits)).then(() => undefined);
      return given;
    },
  };
}
