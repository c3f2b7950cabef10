import type Redis from 'ioredis';
import { ReplyError } from 'ioredis';
import { redis } from '../infra/redis';
import { logger } from '../infra/logger';
import { MAX_HOLD_MS } from '../domain/timings';

/** A held delivery that has not asked again this long (or as long as it was told to wait, if longer) after its turn is forgotten: its workflow is gone. */
const FORGET_AFTER_MS = 10_000;
/** A token promised to a merchant is held for it this long after its delivery is due back (a timer, a workflow task and a local activity away). */
const PROMISE_GRACE_MS = 500;
/** Entries cleaned per ask: bounded, so a huge stale queue costs a few asks, never one unbounded step. */
const CLEAN_PER_ASK = 200;

/**
 * Each partner's delivery rate, shared fairly by its merchants, as one script so every worker admits
 * from the same state atomically (on Redis's clock, so workers on different machines agree):
 *  - a token bucket per partner: `rate` per second, one second of burst;
 *  - while other merchants have held deliveries, each merchant also spends credit, earned at its
 *    share of the rate (`rate / merchants waiting`) up to one second of it: a merchant that has used
 *    its share waits for credit, so one merchant's backlog cannot crowd out another's deliveries,
 *    and a merchant that has been quiet can send its few at once;
 *  - a merchant with credit that finds no token is promised the next one (held for it briefly), so a
 *    merchant with many deliveries awake cannot snatch every token first; while the bucket is full
 *    (nobody with credit is claiming) whoever asks may take one, so none are wasted;
 *  - a queue per merchant of its held deliveries, by first ask: a held delivery is told how long
 *    until its turn should come (until its merchant has credit and a token is free for it, plus its
 *    place in its merchant's queue at the merchant's share), sleeps that long (a durable timer) and
 *    asks again: waiting is not polling.
 * Returns 0 (admitted) or the milliseconds to wait.
 *
 * KEYS: the bucket (tokens, and the merchant promised the next one); `waiting` (merchant with held
 * deliveries → its last ask); `credit` (per merchant: credit, when it was counted, when last
 * admitted); `turns` (merchant with held deliveries → when last admitted: the order in which they
 * get free tokens). ARGV: rate, merchant, delivery, the key prefix of the merchants' queues, and a time
 * to count from instead of Redis's (empty but in tests, which play deliveries out on a clock of their
 * own). All keys share the partner's hash tag: one slot on a Redis Cluster.
 */
const ADMIT_SCRIPT = `
local rate = tonumber(ARGV[1])
local merchant = ARGV[2]
local delivery = ARGV[3]
local queue = ARGV[4] .. merchant
local due = queue .. ':due'
local now = tonumber(ARGV[5])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function leave(m)
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZREM', KEYS[4], m)
  redis.call('HDEL', KEYS[3], m .. ':credit', m .. ':at', m .. ':served')
end

-- forget deliveries that did not come back when told, and merchants that stopped asking
local gone = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, ${CLEAN_PER_ASK})
if #gone > 0 then
  redis.call('ZREM', queue, unpack(gone))
  redis.call('ZREM', due, unpack(gone))
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ${MAX_HOLD_MS * 2 + FORGET_AFTER_MS}, 'LIMIT', 0, ${CLEAN_PER_ASK})) do leave(m) end

local rank = redis.call('ZRANK', queue, delivery)
if not rank then rank = redis.call('ZCARD', queue) end
local others = redis.call('ZCARD', KEYS[2])
if redis.call('ZSCORE', KEYS[2], merchant) then others = others - 1 end
local share = rate / (others + 1)
local c = redis.call('HMGET', KEYS[3], merchant .. ':credit', merchant .. ':at', merchant .. ':served')
local credit = tonumber(c[1]) or math.max(1, share)
credit = math.min(math.max(1, share), credit + math.max(0, now - (tonumber(c[2]) or now)) * share / 1000)
local served = tonumber(c[3]) or 0

local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at', 'promised', 'until')
local tokens = tonumber(bucket[1]) or rate
tokens = math.min(rate, tokens + math.max(0, now - (tonumber(bucket[2]) or now)) * rate / 1000)
local promised = 0
if bucket[3] and bucket[3] ~= merchant and (tonumber(bucket[4]) or 0) > now then promised = 1 end
local free = tokens - promised
local turn = others == 0 or credit >= 1 or free >= math.max(1, rate - 1)
local wait = 0
if free >= 1 and turn then
  tokens = tokens - 1
  credit = math.max(0, credit - 1)
  if bucket[3] == merchant then redis.call('HDEL', KEYS[1], 'promised', 'until') end
  redis.call('ZREM', queue, delivery)
  redis.call('ZREM', due, delivery)
  if others == 0 and redis.call('ZCARD', queue) == 0 then
    leave(merchant)
  else
    -- what it spent counts while others wait, even once its own queue is empty
    redis.call('HSET', KEYS[3], merchant .. ':credit', tostring(credit), merchant .. ':at', now, merchant .. ':served', now)
    if redis.call('ZCARD', queue) == 0 then
      redis.call('ZREM', KEYS[2], merchant)
      redis.call('ZREM', KEYS[4], merchant)
    elseif redis.call('ZSCORE', KEYS[4], merchant) then
      redis.call('ZADD', KEYS[4], now, merchant)
    end
  end
else
  redis.call('HSET', KEYS[3], merchant .. ':credit', tostring(credit), merchant .. ':at', now, merchant .. ':served', served)
  redis.call('ZADD', KEYS[4], 'NX', served, merchant)
  local untilCredit = math.max(0, (1 - credit) * 1000 / share)
  -- a free token comes after those the merchants served before this one will take
  local untilToken = math.max(0, (1 - free) * 1000 / rate) + redis.call('ZRANK', KEYS[4], merchant) * 1000 / rate
  if credit >= 1 and promised == 0 and rank == 0 then
    untilToken = math.max(0, (1 - free) * 1000 / rate)
    redis.call('HSET', KEYS[1], 'promised', merchant, 'until', now + math.ceil(untilToken) + ${PROMISE_GRACE_MS})
  end
  wait = math.max(1, math.min(${MAX_HOLD_MS}, math.ceil(math.max(untilCredit, untilToken) + rank * 1000 / share)))
  redis.call('ZADD', queue, 'NX', now, delivery)
  redis.call('ZADD', due, now + wait + math.max(${FORGET_AFTER_MS}, wait), delivery)
  redis.call('ZADD', KEYS[2], now, merchant)
end
for _, key in ipairs({queue, due, KEYS[2], KEYS[3], KEYS[4]}) do redis.call('PEXPIRE', key, ${(MAX_HOLD_MS * 2 + FORGET_AFTER_MS) * 2}) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], 10000)
return wait
`;

type WithAdmit = Redis & { aesWebhookAdmit(keys: number, ...args: (string | number)[]): Promise<number> };

function withAdmit(client: Redis): WithAdmit {
  if (!('aesWebhookAdmit' in client)) client.defineCommand('aesWebhookAdmit', { lua: ADMIT_SCRIPT });
  return client as unknown as WithAdmit;
}

/** A script that fails (not a lost connection) holds the delivery back this long rather than letting it through. */
const SCRIPT_FAILED_WAIT_MS = 5_000;

/**
 * Asks for one attempt of a delivery to a partner. When Redis cannot be reached the attempt goes
 * ahead: holding deliveries back protects the partner, and stalling them all would be worse. A
 * script error is a defect, not an outage: the delivery waits and asks again. `nowMs` replaces Redis's
 * clock, for tests that play a schedule out on a clock of their own.
 */
export async function admitDelivery(d: { partnerId: number; merchantId: number; deliveryId: string; ratePerSecond: number; nowMs?: number }): Promise<number> {
  const p = `whrate:{${d.partnerId}}`;
  try {
    return await withAdmit(redis()).aesWebhookAdmit(4, `${p}:bucket`, `${p}:waiting`, `${p}:credit`, `${p}:turns`, d.ratePerSecond, String(d.merchantId), d.deliveryId, `${p}:queue:`, d.nowMs ?? '');
  } catch (err) {
    if (err instanceof ReplyError) {
      logger.error({ err, partner: d.partnerId }, 'webhook delivery rate script failed; holding the delivery back');
      return SCRIPT_FAILED_WAIT_MS;
    }
    logger.warn({ err, partner: d.partnerId }, 'webhook delivery rate unavailable; delivering without holdback');
    return 0;
  }
}
