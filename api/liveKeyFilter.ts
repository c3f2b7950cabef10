import { BloomFilter } from 'bloom-filters';
import { liveKeyHashes } from '../db/apiKeys';
import { redis, subscriber } from '../db/redis';
import { logger } from '../infra/logger';

/**
 * Which API keys may be live, known to every instance without a lookup: a Bloom filter of the hashes
 * of every unrevoked, unexpired key, built when first needed and kept fresh through a Redis channel
 * on which every key's creation is announced. An address that failed too many authentications
 * (api/authFailures.ts) has its keys checked here first: a key the filter rules out is refused with
 * no database query, one it admits is looked up as from any address. So a prober's random keys cost
 * nothing, while a customer behind the same NAT, with a key created a moment ago, on an instance
 * started a moment ago, is served.
 *
 * Revoked and expired keys stay in the filter until its next rebuild (every REBUILD_EVERY_MS): they
 * only cost a lookup, which refuses them.
 */
const CHANNEL = 'aes:keys:created';
/**
 * A key that is not live is looked up anyway once in a billion: a prober's million guesses cost about
 * no query at all, for about 43 bits (5.4 bytes) a live key (a million keys: 5.4 MB an instance).
 */
const FALSE_POSITIVES = 1e-9;
/** Room for this many keys created between two rebuilds beyond those it was built with. */
const HEADROOM = 10_000;
/** Drops revoked and expired keys, and keys announced while this instance's subscription was down. */
const REBUILD_EVERY_MS = 5 * 60_000;

interface Built {
  filter: BloomFilter;
  room: number;
}

let built: Promise<Built> | undefined;
let subscribed = false;
/** Hashes announced while a build reads the table: added to what it builds. */
let announcedDuringBuild: string[] | undefined;

function build(): Promise<Built> {
  announcedDuringBuild = [];
  const next = (async () => {
    const hashes = await liveKeyHashes();
    const filter = BloomFilter.create(hashes.length + HEADROOM, FALSE_POSITIVES);
    for (const hash of [...hashes, ...(announcedDuringBuild ?? [])]) filter.add(hash);
    announcedDuringBuild = undefined;
    return { filter, room: HEADROOM };
  })();
  // A failed build (the database away) is tried again at the next question.
  next.catch(() => {
    if (built === next) built = undefined;
  });
  return next;
}

function listen(): void {
  if (subscribed) return;
  subscribed = true;
  const connection = subscriber();
  connection.on('message', (channel: string, hash: string) => {
    if (channel !== CHANNEL) return;
    announcedDuringBuild?.push(hash);
    void built?.then((b) => {
      b.filter.add(hash);
      // Past its room the filter would admit too many strangers' keys: made anew.
      if (--b.room <= 0) rebuild();
    }, () => undefined);
  });
  connection.subscribe(CHANNEL).catch((err) => logger.warn({ err: String(err) }, 'subscribing to key announcements failed'));
  // Announcements made while this connection was away were missed: the filter is read anew once it is back.
  connection.on('ready', rebuild);
  setInterval(rebuild, REBUILD_EVERY_MS).unref();
}

function rebuild(): void {
  const next = build();
  // The filter in use stays until the new one is ready.
  next.then(() => (built = next), () => undefined);
}

/** Whether the key with this hash may be live (false: certainly not, no lookup needed). */
export async function mayBeLiveKey(hash: string): Promise<boolean> {
  listen();
  built ??= build();
  return (await built).filter.has(hash);
}

/** Tells every instance's filter of a key just created (best effort: without Redis, instances learn of it at their next rebuild). */
export async function announceKey(hash: string): Promise<void> {
  await redis()
    .publish(CHANNEL, hash)
    .catch((err) => logger.warn({ err: String(err) }, 'announcing a new key failed: instances admit it from throttled addresses after their next rebuild'));
}
