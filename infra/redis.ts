import Redis from 'ioredis';
import { config } from './config';
import { dependencyAnswered, dependencyFailed } from './dependencyOutages';

/** Every connection of this process is named after it, so CLIENT LIST tells whose it is. */
const connectionName = `aes:${process.pid}`;

let client: Redis | undefined;
let listener: Redis | undefined;

/**
 * The process's Redis connection (rate-limit windows, run event streams). Auto-pipelining sends the
 * commands of concurrent requests issued in one tick as one write, instead of a write each.
 */
export function redis(): Redis {
  if (!client) {
    client = new Redis(config().redisUrl, { connectionName, maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, enableAutoPipelining: true });
    // An outage is logged once and counted (infra/dependencyOutages.ts), not once per reconnect.
    client.on('error', (err) => dependencyFailed('redis', err)).on('ready', () => dependencyAnswered('redis'));
  }
  return client;
}

/**
 * The process's one connection in subscriber mode (a subscribed connection takes no other commands);
 * resubscribes after a reconnect. No ready check: its INFO could meet the connection already
 * subscribed by commands issued while it connected, fail, and force a reconnect.
 */
export function subscriber(): Redis {
  if (!listener) {
    listener = new Redis(config().redisUrl, { connectionName, maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, autoResubscribe: true, enableReadyCheck: false });
    listener.on('error', (err) => dependencyFailed('redis', err));
  }
  return listener;
}

export async function closeRedis(): Promise<void> {
  const open = [client, listener].filter((c): c is Redis => c !== undefined);
  client = listener = undefined;
  await Promise.all(open.map((c) => c.quit().catch(() => c.disconnect())));
}
