import type Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { blockingConnection, redis } from '../db/redis';
import { config } from '../infra/config';
import { logger } from '../infra/logger';
import { streamReads } from '../infra/metrics';

/** One entry of a run's event stream: its id (`ms-seq`), its event type and its data (JSON text). */
export interface StreamEntry {
  id: string;
  type: string;
  data: string;
}

/** How long one read waits in Redis for any of its streams; a new stream wakes it sooner. */
const BLOCK_MS = 2_000;
/** Entries one read takes per stream: a client far behind catches up over several reads. */
const COUNT = 500;
/**
 * After a read that found entries, the next waits this long per stream it carries (at most
 * MAX_PAUSE_MS): a read costs Redis and this process in proportion to its streams, and with hundreds
 * open each read found one or two entries, so re-reading at once spent most of the API's CPU on
 * reads (docs/performance.md). Paced, what one connection spends on reading is bounded whatever the
 * number of streams, and an entry waits at most the pause; a read of a few streams is not paced.
 */
const PAUSE_PER_STREAM_MS = 0.1;
const MAX_PAUSE_MS = 50;

/** Whether stream entry id `a` comes after `b` (ids are `milliseconds-sequence`). */
export function isAfter(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}

type Fields = [string, string[]][];
const entriesOf = (raw: Fields): StreamEntry[] => raw.map(([id, fields]) => ({ id, type: fields[1], data: fields[3] }));

/** One client's place in one run's stream: it is given each entry after `after`, once, in order. */
export class StreamFollow {
  constructor(
    readonly key: string,
    public after: string,
    private readonly onEntries: (entries: StreamEntry[]) => void,
    private readonly release: (follow: StreamFollow) => void,
  ) {}

  /** Hands over the entries this follow has not seen yet, whichever read found them first. */
  deliver(entries: StreamEntry[]): void {
    const fresh = entries.filter((e) => isAfter(e.id, this.after));
    if (fresh.length === 0) return;
    this.after = fresh[fresh.length - 1].id;
    this.onEntries(fresh);
  }

  /** Reads what the stream holds past this follow's place now, without waiting for the shared reader. */
  async catchUp(): Promise<void> {
    this.deliver(entriesOf((await redis().xrange(this.key, `(${this.after}`, '+')) as Fields));
  }

  close(): void {
    this.release(this);
  }
}

/**
 * One blocking connection and the streams it reads: every read is one XREAD over all of them, from
 * each one's earliest unseen entry. A stream added while a read waits in Redis unblocks it (CLIENT
 * UNBLOCK from the shared connection), so the next read includes it at once.
 */
class ReaderConnection {
  private readonly follows = new Map<string, Set<StreamFollow>>();
  /** Each stream's earliest unseen entry among its follows: where the next read starts it. */
  private readonly cursors = new Map<string, string>();
  private readonly connection: Redis = blockingConnection();
  private clientId: number | undefined;
  /** Bumped whenever a stream is added; a read carries the generation of the set it was sent with. */
  private generation = 0;
  private reading: number | undefined;
  private waking = false;
  private idle: (() => void) | undefined;
  private stopped = false;

  constructor() {
    // A reconnected connection has a new client id.
    this.connection.on('ready', () => {
      this.connection.client('ID').then((id) => (this.clientId = Number(id)), () => undefined);
    });
    void this.loop();
  }

  /** Its connection was closed (closeRedis): the reader is made anew on next use. */
  get ended(): boolean {
    return this.stopped || this.connection.status === 'end';
  }

  add(follow: StreamFollow): void {
    let set = this.follows.get(follow.key);
    if (!set) this.follows.set(follow.key, (set = new Set()));
    set.add(follow);
    const cursor = this.cursors.get(follow.key);
    if (cursor === undefined || isAfter(cursor, follow.after)) this.cursors.set(follow.key, follow.after);
    this.generation++;
    this.idle?.();
    void this.wake();
  }

  remove(follow: StreamFollow): void {
    const set = this.follows.get(follow.key);
    set?.delete(follow);
    // A stream nobody follows costs the reads under way a few bytes: no need to wake them.
    if (set?.size === 0) {
      this.follows.delete(follow.key);
      this.cursors.delete(follow.key);
    } else this.moveCursor(follow.key);
  }

  private moveCursor(key: string): void {
    const set = this.follows.get(key);
    if (set) this.cursors.set(key, [...set].reduce((min, f) => (isAfter(min, f.after) ? f.after : min), '99999999999999-0'));
  }

  /** Unblocks the read under way if it was sent without a stream added since; retried while the read is on its way to Redis. */
  private async wake(): Promise<void> {
    if (this.waking) return;
    this.waking = true;
    try {
      for (let tries = 0; tries < 100 && this.reading !== undefined && this.reading < this.generation && !this.ended; tries++) {
        if (this.clientId !== undefined && Number(await redis().client('UNBLOCK', this.clientId)) === 1) return;
        await sleep(2);
      }
    } catch (err) {
      // The read returns within BLOCK_MS anyway.
      logger.warn({ err: String(err) }, 'run stream reader not woken');
    } finally {
      this.waking = false;
    }
  }

  private async loop(): Promise<void> {
    while (!this.ended) {
      if (this.follows.size === 0) {
        await new Promise<void>((resolve) => (this.idle = resolve));
        this.idle = undefined;
        continue;
      }
      const keys = [...this.cursors.keys()];
      const ids = [...this.cursors.values()];
      let reply: [string, Fields][] | null = null;
      this.reading = this.generation;
      try {
        reply = (await this.connection.xread('COUNT', COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...ids)) as [string, Fields][] | null;
        streamReads.inc();
      } catch (err) {
        if (this.connection.status === 'end') {
          this.stopped = true;
          return;
        }
        logger.warn({ err: String(err) }, 'run stream read failed');
        await sleep(200);
      } finally {
        this.reading = undefined;
      }
      for (const [key, raw] of reply ?? []) {
        const entries = entriesOf(raw);
        for (const follow of [...(this.follows.get(key) ?? [])]) follow.deliver(entries);
        this.moveCursor(key);
      }
      const pause = Math.min(MAX_PAUSE_MS, keys.length * PAUSE_PER_STREAM_MS);
      if (reply && pause >= 1) await sleep(pause);
    }
  }
}

/**
 * The API process's reader of run event streams: a fixed few connections (STREAM_READER_CONNECTIONS)
 * read every open client's stream, however many clients there are. A run's stream always goes to the
 * same connection, so two clients of one run share its reads.
 */
class RunStreamReader {
  private readonly connections: ReaderConnection[];

  constructor(count: number) {
    this.connections = Array.from({ length: count }, () => new ReaderConnection());
  }

  get ended(): boolean {
    return this.connections.some((c) => c.ended);
  }

  follow(key: string, after: string, onEntries: (entries: StreamEntry[]) => void): StreamFollow {
    const connection = this.connections[hash(key) % this.connections.length];
    const follow = new StreamFollow(key, after, onEntries, (f) => connection.remove(f));
    connection.add(follow);
    return follow;
  }
}

function hash(key: string): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) >>> 0;
  return h;
}

let reader: RunStreamReader | undefined;

/** The process's stream reader, started on first use (again after closeRedis()). */
export function runStreams(): RunStreamReader {
  if (!reader || reader.ended) reader = new RunStreamReader(config().streamReaderConnections);
  return reader;
}
