import type Redis from 'ioredis';
import { redis } from '../db/redis';
import { logger } from '../infra/logger';
import { MAX_HOLD_MS } from '../workflows/timings';

/** A held delivery that has not asked again this long after its turn was due is forgotten (its workflow is gone). */
const FORGET_AFTER_MS = 10_000;

/**
 * Each partner's delivery rate, shared fairly by its merchants, as one script so every worker admits
 * from the same state atomically (on Redis's clock, so workers on different machines agree):
 *  - a token bucket per partner: `rate` per second, one second of burst;
 *  - a queue per merchant of its held deliveries, oldest first: a merchant's deliveries go in order;
 *  - merchants with held deliveries take turns: while tokens are short (fewer than the merchants
 *    waiting), a token goes only to the merchant served longest ago, so one merchant's backlog
 *    cannot crowd out another merchant's deliveries.
 * A held delivery is told how long until its turn should come (its place in its merchant's queue
 * times the merchants taking turns, at the rate), sleeps that long and asks again: it is not polled.
 * Returns 0 (admitted) or the milliseconds to wait.
 *
 * KEYS: the bucket; `turns` (waiting merchant → when last served: the lowest's turn); `asked`
 * (waiting merchant → its last ask, to forget merchants whose deliveries are gone); `served` (merchant
 * → when last served). ARGV: rate, merchant, delivery, the key prefix of the merchants' queues (all
 * keys share the partner's hash tag: one slot on a Redis Cluster).
 */
const ADMIT_SCRIPT = `
local rate = tonumber(ARGV[1])
local merchant = ARGV[2]
local delivery = ARGV[3]
local queue = ARGV[4] .. merchant
local due = queue .. ':due'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- forget deliveries that did not come back when told, and merchants that stopped asking
local gone = redis.call('ZRANGEBYSCORE', due, '-inf', now)
if #gone > 0 then
  redis.call('ZREM', queue, unpack(gone))
  redis.call('ZREM', due, unpack(gone))
end
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - ${MAX_HOLD_MS + FORGET_AFTER_MS})
if #stale > 0 then
  redis.call('ZREM', KEYS[2], unpack(stale))
  redis.call('ZREM', KEYS[3], unpack(stale))
end
if redis.call('ZCARD', queue) == 0 then
  redis.call('ZREM', KEYS[2], merchant)
  redis.call('ZREM', KEYS[3], merchant)
end

local rank = redis.call('ZRANK', queue, delivery)
if not rank then rank = redis.call('ZCARD', queue) end
local waiting = redis.call('ZCARD', KEYS[2])
local others = waiting
if redis.call('ZSCORE', KEYS[2], merchant) then others = waiting - 1 end
local merchants = others + 1

local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or rate
local at = tonumber(bucket[2]) or now
tokens = math.min(rate, tokens + math.max(0, now - at) * rate / 1000)
local turn = others == 0 or tokens >= merchants or redis.call('ZRANGE', KEYS[2], 0, 0)[1] == merchant
local wait = 0
if tokens >= 1 and turn and rank < math.max(1, math.floor(tokens / merchants)) then
  tokens = tokens - 1
  redis.call('ZADD', KEYS[4], now, merchant)
  redis.call('ZREM', queue, delivery)
  redis.call('ZREM', due, delivery)
  if redis.call('ZCARD', queue) == 0 then
    redis.call('ZREM', KEYS[2], merchant)
    redis.call('ZREM', KEYS[3], merchant)
  elseif redis.call('ZSCORE', KEYS[2], merchant) then
    redis.call('ZADD', KEYS[2], now, merchant)
  end
else
  wait = math.min(${MAX_HOLD_MS}, math.ceil((rank + 1) * merchants * 1000 / rate))
  redis.call('ZADD', queue, 'NX', now, delivery)
  redis.call('ZADD', due, now + wait + ${FORGET_AFTER_MS}, delivery)
  redis.call('ZADD', KEYS[2], 'NX', tonumber(redis.call('ZSCORE', KEYS[4], merchant)) or 0, merchant)
  redis.call('ZADD', KEYS[3], now, merchant)
end
for _, key in ipairs({queue, due, KEYS[2], KEYS[3], KEYS[4]}) do redis.call('PEXPIRE', key, ${(MAX_HOLD_MS + FORGET_AFTER_MS) * 2}) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], 10000)
return wait
`;

type WithAdmit = Redis & { aesWebhookAdmit(keys: number, ...args: (string | number)[]): Promise<number> };

function withAdmit(client: Redis): WithAdmit {
  if (!('aesWebhookAdmit' in client)) client.defineCommand('aesWebhookAdmit', { lua: ADMIT_SCRIPT });
  return client as unknown as WithAdmit;
}

/**
 * Asks for one attempt of a delivery to a partner. When Redis cannot answer the attempt goes ahead:
 * holding deliveries back protects the partner, and losing or stalling them would be worse.
 */
export async function admitDelivery(d: { partnerId: number; merchantId: number; deliveryId: string; ratePerSecond: number }): Promise<number> {
  const p = `whrate:{${d.partnerId}}`;
  try {
    return await withAdmit(redis()).aesWebhookAdmit(4, `${p}:bucket`, `${p}:turns`, `${p}:asked`, `${p}:served`, d.ratePerSecond, String(d.merchantId), d.deliveryId, `${p}:queue:`);
  } catch (err) {
    logger.warn({ err, partner: d.partnerId }, 'webhook delivery rate unavailable; delivering without holdback');
    return 0;
  }
}
