import { performance } from 'node:perf_hooks';

/**
 * One request of a phase. It throws when the answer is not the expected success; it may return one
 * extra figure per request (the stream phase returns its first-delta overhead).
 */
export type Operation = () => Promise<number | void>;

export interface Summary {
  /** Requests measured (warm-up excluded) and how many of them failed. */
  n: number;
  /** Requests that succeeded over the whole phase, warm-up included: what the processes' CPU time was spent on. */
  served: number;
  errors: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  rps: number;
  /** The operation's extra figure, summarised over the measured requests that returned one. */
  extra?: Percentiles;
  /** The first failure, so a broken phase says why. */
  first_error?: string;
}

export interface Percentiles {
  n: number;
  p50: number;
  p95: number;
  p99: number;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** Nearest-rank percentiles: every reported value is one that was observed. */
export function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => (sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]) : NaN);
  return { n: sorted.length, p50: at(50), p95: at(95), p99: at(99) };
}

class Recorder {
  latencies: number[] = [];
  extras: number[] = [];
  errors = 0;
  served = 0;
  firstError: string | undefined;

  async time(op: Operation, keep: boolean): Promise<{ started: number; ended: number; ok: boolean }> {
    const started = performance.now();
    let ok = true;
    let extra: number | void = undefined;
    try {
      extra = await op();
    } catch (err) {
      ok = false;
      if (keep) {
        this.errors++;
        this.firstError ??= String((err as Error)?.message ?? err);
      }
    }
    const ended = performance.now();
    if (ok) this.served++;
    if (keep && ok) {
      this.latencies.push(ended - started);
      if (typeof extra === 'number') this.extras.push(extra);
    }
    return { started, ended, ok };
  }

  summary(rps: number, n: number): Summary {
    const p = percentiles(this.latencies);
    return {
      n,
      served: this.served,
      errors: this.errors,
      p50_ms: p.p50,
      p95_ms: p.p95,
      p99_ms: p.p99,
      rps: Math.round(rps * 10) / 10,
      ...(this.extras.length > 0 && { extra: percentiles(this.extras) }),
      ...(this.firstError && { first_error: this.firstError }),
    };
  }
}

/** Concurrency 1: `warmup` requests thrown away, then `count` requests one after another. */
export async function sequential(op: Operation, o: { warmup: number; count: number }): Promise<Summary> {
  const recorder = new Recorder();
  for (let i = 0; i < o.warmup; i++) await recorder.time(op, false);
  const started = performance.now();
  for (let i = 0; i < o.count; i++) await recorder.time(op, true);
  return recorder.summary(o.count / ((performance.now() - started) / 1000), o.count);
}

/** How a closed loop is run, for the bench's log: `32 (5 s warm-up, 20 s measured)`. */
export function loopShape(o: { concurrency: number; warmupMs: number; durationMs: number }): string {
  return `${o.concurrency} (${o.warmupMs / 1000} s warm-up, ${o.durationMs / 1000} s measured)`;
}

/**
 * Closed loop: `concurrency` loops each send their next request as soon as the previous answers.
 * Requests started during the warm-up are thrown away; throughput counts the requests started in the
 * measured window that also finished inside it, divided by the window.
 */
export async function closedLoop(op: Operation, o: { concurrency: number; warmupMs: number; durationMs: number }): Promise<Summary> {
  const loop = new ClosedLoopWindows();
  await loop.window(op, o);
  return loop.summary();
}

/**
 * One operation's closed loop measured over several windows, with other phases between them, as one:
 * its percentiles over every measured request, its throughput over the windows' time together.
 */
export class ClosedLoopWindows {
  private readonly recorder = new Recorder();
  private n = 0;
  private completedInWindows = 0;
  private measuredMs = 0;

  /** One window (a closed loop as closedLoop runs it); says how many requests it served, warm-up included. */
  async window(op: Operation, o: { concurrency: number; warmupMs: number; durationMs: number }): Promise<{ served: number }> {
    const servedBefore = this.recorder.served;
    const from = performance.now() + o.warmupMs;
    const until = from + o.durationMs;
    const loop = async () => {
      while (performance.now() < until) {
        const keep = performance.now() >= from;
        const { ended, ok } = await this.recorder.time(op, keep);
        if (keep) this.n++;
        if (keep && ok && ended <= until) this.completedInWindows++;
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, loop));
    this.measuredMs += o.durationMs;
    return { served: this.recorder.served - servedBefore };
  }

  summary(): Summary {
    return this.recorder.summary(this.completedInWindows / (this.measuredMs / 1000), this.n);
  }
}
