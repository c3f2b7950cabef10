import Redis from 'ioredis';
import { config } from '../infra/config';

/** Every connection of this process is named after it, so CLIENT LIST tells whose it is. */
const connectionName = `aes:${process.pid}`;

let client: Redis | undefined;
let listener: Redis | undefined;
const readers: Redis[] = [];

/**
 * The process's Redis connection (rate-limit windows, run event streams). Auto-pipelining sends the
 * commands of concurrent requests issued in one tick as one write, instead of a write each.
 */
export function redis(): Redis {
  client ??= new Redis(config().redisUrl, { connectionName, maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, enableAutoPipelining: true });
  return client;
}

/**
 * The process's one connection in subscriber mode (a subscribed connection takes no other commands);
 * resubscribes after a reconnect. No ready check: its INFO could meet the connection already
 * subscribed by commands issued while it connected, fail, and force a reconnect.
 */
export function subscriber(): Redis {
  listener ??= new Redis(config().redisUrl, { connectionName, maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, autoResubscribe: true, enableReadyCheck: false });
  return listener;
}

/**
 * A connection of its own for blocking reads (XREAD BLOCK holds its connection until it returns), closed
 * with the others. The API's stream reader opens a fixed few of these, whatever the number of clients.
 */
export function blockingConnection(): Redis {
  const connection = new Redis(config().redisUrl, { connectionName, maxRetriesPerRequest: null, enableOfflineQueue: true, lazyConnect: false });
  readers.push(connection);
  return connection;
}

export async function closeRedis(): Promise<void> {
  // A blocked read would hold QUIT until it returns: blocking connections are simply dropped.
  for (const reader of readers.splice(0)) reader.disconnect();
  const open = [client, listener].filter((c): c is Redis => c !== undefined);
  client = listener = undefined;
  await Promise.all(open.map((c) => c.quit().catch(() => c.disconnect())));
}
