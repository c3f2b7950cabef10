import type Redis from 'ioredis';
import { redis } from '../db/redis';
import { logger } from '../infra/logger';
import { WAITING_MERCHANT_WINDOW_MS } from '../workflows/timings';

/**
 * Each partner's delivery rate, shared fairly by its merchants. A token bucket per partner (`rate`
 * per second, one second of burst) admits attempts; within each one-second window a merchant may take
 * at most its share, the rate divided by the merchants asking in the last few seconds, so a noisy
 * merchant uses the whole rate only while no other merchant is waiting. One script, so every worker
 * admits from the same bucket atomically; Redis's clock, so workers on different machines agree.
 * Returns 0 (admitted) or how many milliseconds to wait before asking again.
 */
const ADMIT_SCRIPT = `
local rate = tonumber(ARGV[1])
local merchant = ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now, merchant)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ${WAITING_MERCHANT_WINDOW_MS})
redis.call('PEXPIRE', KEYS[2], ${WAITING_MERCHANT_WINDOW_MS * 2})
local share = math.ceil(rate / redis.call('ZCARD', KEYS[2]))
local window = KEYS[3] .. ':' .. math.floor(now / 1000)
local used = tonumber(redis.call('HGET', window, merchant)) or 0
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or rate
local at = tonumber(bucket[2]) or now
tokens = math.min(rate, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if used >= share then
  wait = 1000 - (now % 1000)
elseif tokens < 1 then
  wait = math.ceil((1 - tokens) * 1000 / rate)
else
  tokens = tokens - 1
  redis.call('HINCRBY', window, merchant, 1)
  redis.call('PEXPIRE', window, 3000)
end
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
 * Asks for one delivery attempt to a partner. When Redis cannot answer the attempt goes ahead:
 * holding deliveries back protects the partner, and losing or stalling them would be worse.
 */
export async function admitDelivery(partnerId: number, merchantId: number, ratePerSecond: number): Promise<number> {
  const p = `whrate:{${partnerId}}`;
  try {
    return await withAdmit(redis()).aesWebhookAdmit(3, `${p}:bucket`, `${p}:waiting`, `${p}:share`, ratePerSecond, String(merchantId));
  } catch (err) {
    logger.warn({ err, partner: partnerId }, 'webhook delivery rate unavailable; delivering without holdback');
    return 0;
  }
}
