import { BloomFilter } from 'bloom-filters';
import { liveKeyHashes } from '../db/apiKeys';
import { redis, subscriber } from '../infra/redis';
import { logger } from '../infra/logger';

/**
 * Which API keys may be live, known to every instance without a lookup: a Bloom filter of the hashes
 * of every unrevoked, unexpired key, built when first needed and kept fresh through a Redis channel
 * on which every key's creation is announced. An address that failed too many authentications
 * (callers/authFailures.ts) has its keys checked here first: a key the filter rules out is refused with
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
/** The build under way, if any, with the hashes announced while it reads the table (added to what it builds). */
let building: { next: Promise<Built>; announced: string[] } | undefined;
let listening = false;

/** One build at a time: a question or a rebuild during one waits for it. */
function build(): Promise<Built> {
  if (building) return building.next;
  const announced: string[] = [];
  const next = (async () => {
    const hashes = await liveKeyHashes();
    const filter = BloomFilter.create(hashes.length + HEADROOM, FALSE_POSITIVES);
    for (const hash of hashes) filter.add(hash);
    return { filter, room: HEADROOM };
  })();
  building = { next, announced };
  void next.then(
    (b) => {
      // Announced while it was read (until now): in it before it answers.
      for (const hash of announced) b.filter.add(hash);
      built = next;
    },
    // A failed build (the database away) is tried again at the next question; the filter in use stays.
    () => undefined,
  ).finally(() => (building = undefined));
  return next;
}

function listen(): void {
  if (listening) return;
  listening = true;
  const connection = subscriber();
  connection.on('message', (channel: string, hash: string) => {
    if (channel !== CHANNEL) return;
    building?.announced.push(hash);
    void built?.then((b) => {
      b.filter.add(hash);
      // Past its room the filter would admit too many strangers' keys: made anew.
      if (--b.room <= 0) void build();
    }, () => undefined);
  });
  const subscribe = () => connection.subscribe(CHANNEL).catch((err) => logger.warn({ err: String(err) }, 'subscribing to key announcements failed: tried again when Redis is back'));
  void subscribe();
  // Announcements made while this connection was away were missed: it subscribes again (a first
  // subscription may have failed) and the filter is read anew.
  let connecting = connection.status !== 'ready';
  connection.on('ready', () => {
    // Its first connection is no reconnect: the filter built at the first question has everything.
    if (connecting) return void (connecting = false);
    void subscribe();
    void build().catch(() => undefined);
  });
  setInterval(() => void build().catch(() => undefined), REBUILD_EVERY_MS).unref();
}

/** Whether the key with this hash may be live (false: certainly not, no lookup needed). */
export async function mayBeLiveKey(hash: string): Promise<boolean> {
  listen();
  return (await (built ?? build())).filter.has(hash);
}

/** Tells every instance's filter of a key just created (best effort: without Redis, instances learn of it at their next rebuild). */
export async function announceKey(hash: string): Promise<void> {
  await redis()
    .publish(CHANNEL, hash)
    .catch((err) => logger.warn({ err: String(err) }, 'announcing a new key failed: instances admit it from throttled addresses after their next rebuild'));
}
