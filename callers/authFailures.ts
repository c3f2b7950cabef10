import { LRUCache } from 'lru-cache';
import { now } from '../domain/clock';
import { config } from '../infra/config';
import { logger } from '../infra/logger';
import { redis } from '../infra/redis';


/** Addresses refused until the end of the window in which they failed too often (this instance's view). */
const blocked = new LRUCache<string, number>({ max: 10_000 });
let watching = false;

/**
 * This instance's view is a copy of the counts in Redis: when Redis comes back (a restart leaves it
 * empty), the copy goes too, so every instance starts again from the same empty counts.
 */
function forgetOnReconnect(): void {
  if (watching) return;
  watching = true;
  redis().on('ready', () => blocked.clear());
}

/**
 * Seconds until this client address may try a credential again, or undefined when it may now. Checked
 * in memory before any lookup, so a prober costs neither a Redis nor a PostgreSQL round trip.
 */
export function addressRefusedFor(address: string): number | undefined {
  forgetOnReconnect();
  const until = blocked.get(address);
  if (until === undefined) return undefined;
  const left = until - now();
  if (left <= 0) {
    blocked.delete(address);
    return undefined;
  }
  return Math.ceil(left / 1000);
}

/**
 * Counts a failed authentication against the client address in a fixed window shared by every API
 * instance (Redis); past AUTH_FAILURE_LIMIT the address is refused for the rest of the window.
 * Best effort: without Redis, failures are not counted (authentication itself still refuses).
 */
export async function recordAuthFailure(address: string): Promise<void> {
  const limit = config().authFailureLimit;
  if (limit === 0) return;
  const at = now();
  const windowMs = config().authFailureWindowMs;
  const window = Math.floor(at / windowMs);
  const key = `authfail:${address}:${window}`;
  try {
    const [[, count]] = (await redis().multi().incr(key).pexpire(key, windowMs + 1000).exec()) as [[Error | null, number]];
    // A whole window from the failure that passed the limit, however late in its window it came.
    if (count > limit) blocked.set(address, at + windowMs);
  } catch (err) {
    logger.warn({ err: String(err) }, 'failed authentication not counted');
  }
}
