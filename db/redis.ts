import Redis from 'ioredis';
import { config } from '../infra/config';

let client: Redis | undefined;

/**
 * The process's Redis connection (rate-limit windows, run event streams). Auto-pipelining sends the
 * commands of concurrent requests issued in one tick as one write, instead of a write each.
 */
export function redis(): Redis {
  client ??= new Redis(config().redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, enableAutoPipelining: true });
  return client;
}

export async function closeRedis(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) await c.quit().catch(() => c.disconnect());
}
