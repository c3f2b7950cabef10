import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import { percentiles, type Percentiles } from './load';
import { expectOk, operations } from './operations';
import type { PhaseUsage } from './processes';
import type { Stack } from './stack';
import { slowTag, tokenTag } from './stubProvider';
import { timedFrames } from './sseFrames';
import { perRun, temporalCounts } from './temporalCounters';

/** A long run as a real model gives it: `chunks` deltas, each after `waitMs`. */
export interface RunShape {
  chunks: number;
  waitMs: number;
}

export interface OpenLoopFigures {
  rate_per_s: number;
  seconds: number;
  run_ms: number;
  /** Chunks in each run's reply. */
  chunks: number;
  runs: number;
  failures: number;
  first_error?: string;
  /** Client's first delta minus its request's start, less the stub's wait before its first chunk. */
  first_delta_overhead_ms: Percentiles;
  /** The stream's end minus its request's start, less the run's own length (chunks × wait). */
  duration_overhead_ms: Percentiles;
  /** When the provider was called, from the request's start: the part of the first-delta overhead spent before the call. */
  call_delay_ms: Percentiles;
  /** The slowest call delay of the runs that arrived in each 5 s of the loop: whether waits built up, or came in bursts. */
  call_delay_max_by_5s: number[];
  /** The runs that waited longest for their provider call, for their histories. */
  slowest: { run: string; call_delay_ms: number }[];
  /** Streams the bench held open at once, and provider calls the stub answered at once (runs a worker held). */
  peak_open_streams: number;
  peak_provider_calls: number;
  /** The Temporal server's requests, persistence operations and history tasks per run, by operation (bench/temporalCounters.ts). */
  temporal_per_run: Record<string, number>;
  usage: PhaseUsage;
}

let seq = 0;

/** Reads one streamed run to its end: when its first delta came, and its terminal events. */
async function streamedRun(s: Stack, shape: RunShape): Promise<{ firstDeltaMs: number; totalMs: number; callDelayMs: number; runId: string }> {
  const started = performance.now();
  const token = `i${++seq}`;
  const res = await fetch(`${s.api}/api/v2/responses`, {
    method: 'POST',
    headers: s.auth,
    body: JSON.stringify({ agent: s.agent, input: `Go. ${slowTag(shape.chunks, shape.waitMs)} ${tokenTag(token)}`, stream: true, timeout_ms: 120_000 }),
  });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await expectOk(res, 'streamed POST /api/v2/responses');
    throw new Error('answered without an event stream');
  }
  let firstDeltaAt: number | undefined;
  const terminals: string[] = [];
  let runId = '';
  for await (const { frame, at, event } of timedFrames(res)) {
    if (event === 'response.output_text.delta') firstDeltaAt ??= at;
    if (event === 'response.started') runId = /"id":"(run_[^"]+)"/.exec(frame)?.[1] ?? '';
    if (event === 'response.completed' || event === 'response.failed' || event === 'response.cancelled') terminals.push(event);
  }
  if (terminals.length !== 1 || terminals[0] !== 'response.completed' || firstDeltaAt === undefined) throw new Error(`stream ended with ${terminals.join(', ') || 'no terminal event'}`);
  const firstChunkAt = s.stub.takeFirstChunkAt(token) ?? NaN;
  return { firstDeltaMs: firstDeltaAt - started - shape.waitMs, totalMs: performance.now() - started - shape.chunks * shape.waitMs, callDelayMs: firstChunkAt - shape.waitMs - started, runId };
}

/**
 * Open loop: a streamed run starts every 1/rate s for `seconds`, whatever the earlier ones are doing,
 * so rate × run length are in flight at steady state; each is read to its terminal event.
 */
export async function openLoop(s: Stack, o: { rate: number; seconds: number } & RunShape): Promise<OpenLoopFigures> {
  const firstDelta: number[] = [];
  const duration: number[] = [];
  const callDelay: number[] = [];
  const byDelay: { run: string; call_delay_ms: number }[] = [];
  const by5s: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  let open = 0;
  let peakOpen = 0;
  s.stub.resetPeak();
  const before = await temporalCounts(s.temporalMetrics);
  const { usage } = await s.sampler.during(async () => {
    const runs: Promise<void>[] = [];
    const t0 = performance.now();
    for (let i = 0; i < o.rate * o.seconds; i++) {
      const wait = t0 + (i * 1000) / o.rate - performance.now();
      if (wait > 0) await sleep(wait);
      open++;
      peakOpen = Math.max(peakOpen, open);
      const bucket = Math.floor(i / (o.rate * 5));
      runs.push(
        streamedRun(s, o)
          .then(({ firstDeltaMs, totalMs, callDelayMs, runId }) => {
            by5s[bucket] = Math.max(by5s[bucket] ?? 0, Math.round(callDelayMs));
            byDelay.push({ run: runId, call_delay_ms: Math.round(callDelayMs) });
            firstDelta.push(firstDeltaMs);
            duration.push(totalMs);
            callDelay.push(callDelayMs);
          })
          .catch((err) => {
            failures++;
            firstError ??= String(err?.message ?? err);
          })
          .finally(() => open--),
      );
    }
    await Promise.all(runs);
  });
  const temporalPerRun = perRun(before, await temporalCounts(s.temporalMetrics), o.rate * o.seconds);
  return {
    rate_per_s: o.rate,
    seconds: o.seconds,
    run_ms: o.chunks * o.waitMs,
    chunks: o.chunks,
    runs: o.rate * o.seconds,
    failures,
    ...(firstError && { first_error: firstError }),
    first_delta_overhead_ms: percentiles(firstDelta),
    duration_overhead_ms: percentiles(duration),
    call_delay_ms: percentiles(callDelay),
    call_delay_max_by_5s: Array.from(by5s, (ms) => ms ?? 0),
    slowest: byDelay.sort((a, b) => b.call_delay_ms - a.call_delay_ms).slice(0, 3),
    peak_open_streams: peakOpen,
    peak_provider_calls: s.stub.peakInFlight,
    temporal_per_run: temporalPerRun,
    usage,
  };
}

/** CPU each process group spent per run of an open loop, as `name ms, …`. */
export function cpuPerRun(o: OpenLoopFigures): string {
  return Object.entries(o.usage.cpuMs)
    .filter(([, ms]) => ms > 0)
    .map(([name, ms]) => `${name} ${(ms / o.runs).toFixed(1)}`)
    .join(', ');
}

export interface OpenStreamsFigures {
  streams: number;
  failures: number;
  first_error?: string;
  /** Redis connections the API process held while every stream was open (CLIENT LIST, by its connection name). */
  api_redis_connections: number;
  usage: PhaseUsage;
}

/** `count` streamed runs opened at once and held open together; counts the API's Redis connections meanwhile. */
export async function openStreams(s: Stack, count: number, shape: RunShape): Promise<OpenStreamsFigures> {
  let failures = 0;
  let firstError: string | undefined;
  let open = 0;
  let connections = 0;
  const admin = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const { usage } = await s.sampler.during(async () => {
    const runs = Array.from({ length: count }, async () => {
      open++;
      try {
        await streamedRun(s, shape);
      } catch (err) {
        failures++;
        firstError ??= String((err as Error)?.message ?? err);
      } finally {
        open--;
      }
    });
    // Counted once every stream is open (half the run's length in), then again while they drain.
    await sleep((shape.chunks * shape.waitMs) / 2);
    for (let i = 0; i < 5 && open > 0; i++) {
      const list = (await admin.client('LIST')) as string;
      const mine = list.split('\n').filter((line) => line.includes(` name=aes:${s.pids.api} `)).length;
      connections = Math.max(connections, mine);
      await sleep(500);
    }
    await Promise.all(runs);
  });
  admin.disconnect();
  return { streams: count, failures, ...(firstError && { first_error: firstError }), api_redis_connections: connections, usage };
}

export interface BatchFigures {
  runs: number;
  run_ms: number;
  failures: number;
  seconds: number;
  /** The batch's time over one run's length. */
  over_one_run: number;
  /** As many floor workflows (a no-op activity) posted at once to the floor process, before the batch: what Temporal alone takes to turn them over here. */
  floor_seconds: number;
}

/**
 * Closed loop: `count` plain runs, each `ms` long at the provider, posted at once; how long until all
 * are answered. First as many floor workflows at once, which is the batch's lower bound here: the
 * time Temporal and one process take to start and finish that many workflows that do nothing.
 */
export async function plainBatch(s: Stack, count: number, ms: number): Promise<BatchFigures> {
  let failures = 0;
  const { floor } = operations(s);
  const floorStarted = performance.now();
  await Promise.all(Array.from({ length: count }, () => floor().catch(() => failures++)));
  const floorSeconds = (performance.now() - floorStarted) / 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async () => {
      const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input: `Go. ${slowTag(1, ms)}`, timeout_ms: 120_000 }) });
      const body = (await res.json()) as { status?: string };
      if (res.status !== 200 || body.status !== 'completed') failures++;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { runs: count, run_ms: ms, failures, seconds: Math.round(seconds * 100) / 100, over_one_run: Math.round((seconds * 1000 * 100) / ms) / 100, floor_seconds: Math.round(floorSeconds * 100) / 100 };
}

export interface ScaleOutFigures {
  runs: number;
  run_ms: number;
  /** Provider calls in flight at once with one worker process, then with two: the runs the workers held. */
  one_worker_peak_calls: number;
  two_workers_peak_calls: number;
  ratio: number;
  failures: number;
}

/** Posts `count` plain runs of `ms` each at once and returns how many provider calls were in flight together. */
export async function heldAtOnce(s: Stack, count: number, ms: number): Promise<{ peak: number; failures: number }> {
  s.stub.resetPeak();
  let failures = 0;
  await Promise.all(
    Array.from({ length: count }, async () => {
      const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input: `Go. ${slowTag(1, ms)}`, timeout_ms: 120_000 }) });
      const body = (await res.json()) as { status?: string };
      if (res.status !== 200 || body.status !== 'completed') failures++;
    }),
  );
  return { peak: s.stub.peakInFlight, failures };
}

/** Held at once by one worker process, then by two (more long runs at once than one worker has slots for, WORKER_MAX_INFLIGHT_RUNS). */
export function scaleOutFigures(count: number, ms: number, one: { peak: number; failures: number }, two: { peak: number; failures: number }): ScaleOutFigures {
  return {
    runs: count,
    run_ms: ms,
    one_worker_peak_calls: one.peak,
    two_workers_peak_calls: two.peak,
    ratio: Math.round((two.peak / Math.max(1, one.peak)) * 100) / 100,
    failures: one.failures + two.failures,
  };
}

/** A run's workflow history as milliseconds from its start: where a slow run's time went. */
export async function timeline(runId: string): Promise<string> {
  const { temporal } = await import('../infra/temporalClient');
  const events = (await (await temporal()).workflow.getHandle(runId).fetchHistory()).events ?? [];
  const ms = (t: unknown) => {
    const { seconds, nanos } = t as { seconds: { toNumber(): number } | number; nanos: number };
    return (typeof seconds === 'number' ? seconds : seconds.toNumber()) * 1000 + nanos / 1e6;
  };
  const start = ms(events[0]?.eventTime);
  return events
    .map((e) => {
      const kind = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? '?';
      return `${Math.round(ms(e.eventTime) - start)} ${kind.replace('EventAttributes', '')}`;
    })
    .join(', ');
}
