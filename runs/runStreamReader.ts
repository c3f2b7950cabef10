import { redis } from '../infra/redis';
import { logger } from '../infra/logger';
import { streamReads } from '../infra/metrics';

/** One entry of a run's event stream: its id (`ms-seq`), its event type and its data (JSON text). */
export interface StreamEntry {
  id: string;
  type: string;
  data: string;
}

/** Entries one read takes per stream: a client far behind catches up over several reads. */
const COUNT = 500;
/**
 * Every followed stream is read this often whatever it was told: a notice lost (Redis reconnecting,
 * a subscription refused) delays its entries by at most this, never loses them.
 */
const SWEEP_MS = 1_000;

/** Whether stream entry id `a` comes after `b` (ids are `milliseconds-sequence`). */
export function isAfter(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}

type Fields = [string, string[]][];

/** The id of a stream's latest entry ('0-0' for none): a follow from it is given only what comes next. */
export async function latestEntryId(key: string): Promise<string> {
  const [last] = (await redis().xrevrange(key, '+', '-', 'COUNT', 1)) as Fields;
  return last?.[0] ?? '0-0';
}
const entriesOf = (raw: Fields): StreamEntry[] => raw.map(([id, fields]) => ({ id, type: fields[1], data: fields[3] }));

/** One client's place in one run's stream: it is given each entry after `after`, once, in order. */
export class StreamFollow {
  constructor(
    readonly key: string,
    public after: string,
    private readonly onEntries: (entries: StreamEntry[]) => void,
    private readonly reader: RunStreamReader,
  ) {}

  /** Hands over the entries this follow has not seen yet, whichever read found them first. */
  deliver(entries: StreamEntry[]): void {
    const fresh = entries.filter((e) => isAfter(e.id, this.after));
    if (fresh.length === 0) return;
    this.after = fresh[fresh.length - 1].id;
    this.onEntries(fresh);
  }

  /** The stream has new entries (its worker said so): they are read in the process's next read. */
  poke(): void {
    this.reader.poke(this.key);
  }

  /** Reads what the stream holds past this follow's place now, without waiting for the shared reader. */
  async catchUp(): Promise<void> {
    this.deliver(entriesOf((await redis().xrange(this.key, `(${this.after}`, '+')) as Fields));
  }

  close(): void {
    this.reader.remove(this);
  }
}

/**
 * The API process's reader of run event streams. A worker that appends to a run's stream also
 * publishes a notice on the run's channel, which the client's relay listens to (runs/settlements.ts);
 * the notice marks the stream, and one XREAD (not blocking) reads every marked stream from its
 * earliest unseen entry, on the process's connection. So reading costs in proportion to the entries
 * written, not to the streams open: a blocking XREAD over every open stream, re-sent after each
 * entry, carried hundreds of keys to find one or two (it was the API's largest cost with hundreds of
 * streams open, docs/performance.md). Every stream is also read once a SWEEP_MS, for notices lost.
 */
class RunStreamReader {
  private readonly follows = new Map<string, Set<StreamFollow>>();
  /** Each stream's earliest unseen entry among its follows: where the next read starts it. */
  private readonly cursors = new Map<string, string>();
  /** Streams to read in the next read. */
  private readonly marked = new Set<string>();
  private reading = false;
  private scheduled = false;
  private sweep: NodeJS.Timeout | undefined;

  follow(key: string, after: string, onEntries: (entries: StreamEntry[]) => void): StreamFollow {
    const follow = new StreamFollow(key, after, onEntries, this);
    let set = this.follows.get(key);
    if (!set) this.follows.set(key, (set = new Set()));
    set.add(follow);
    const cursor = this.cursors.get(key);
    if (cursor === undefined || isAfter(cursor, after)) this.cursors.set(key, after);
    this.sweep ??= setInterval(() => this.sweepAll(), SWEEP_MS).unref();
    // What the stream already holds (a resumed client's backlog, the events of a run that began before this).
    this.poke(key);
    return follow;
  }

  remove(follow: StreamFollow): void {
    const set = this.follows.get(follow.key);
    set?.delete(follow);
    if (set?.size === 0) {
      this.follows.delete(follow.key);
      this.cursors.delete(follow.key);
      this.marked.delete(follow.key);
    } else this.moveCursor(follow.key);
    if (this.follows.size === 0 && this.sweep) {
      clearInterval(this.sweep);
      this.sweep = undefined;
    }
  }

  poke(key: string): void {
    if (!this.follows.has(key)) return;
    this.marked.add(key);
    this.schedule();
  }

  private sweepAll(): void {
    for (const key of this.follows.keys()) this.marked.add(key);
    this.schedule();
  }

  private moveCursor(key: string): void {
    const set = this.follows.get(key);
    if (set) this.cursors.set(key, [...set].reduce((min, f) => (isAfter(min, f.after) ? f.after : min), '99999999999999-0'));
  }

  /** One read at a time: streams marked while one is under way go in the next, in one XREAD. */
  private schedule(): void {
    if (this.reading || this.scheduled || this.marked.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.read();
    });
  }

  private async read(): Promise<void> {
    const keys = [...this.marked].filter((key) => this.cursors.has(key));
    this.marked.clear();
    if (keys.length === 0) return;
    this.reading = true;
    try {
      const reply = (await redis().xread('COUNT', COUNT, 'STREAMS', ...keys, ...keys.map((key) => this.cursors.get(key)!))) as [string, Fields][] | null;
      streamReads.inc();
      for (const [key, raw] of reply ?? []) {
        const entries = entriesOf(raw);
        for (const follow of [...(this.follows.get(key) ?? [])]) follow.deliver(entries);
        this.moveCursor(key);
        // A full read may have left more behind.
        if (raw.length === COUNT) this.marked.add(key);
      }
    } catch (err) {
      // Read again at the next notice or sweep.
      logger.warn({ err: String(err) }, 'run stream read failed');
    } finally {
      this.reading = false;
      this.schedule();
    }
  }
}

let reader: RunStreamReader | undefined;

/** The process's stream reader, made on first use. */
export function runStreams(): RunStreamReader {
  reader ??= new RunStreamReader();
  return reader;
}
