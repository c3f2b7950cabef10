import { logger } from '../infra/logger';
import { RUN_EVENTS_MAX_LEN, RUN_EVENTS_TTL_S, runEventsKey, runChannel, STREAM_MOVED, WAITING, type StreamEventType } from '../domain/streamEvents';
import type { ChainableCommander } from 'ioredis';
import type Redis from 'ioredis';
import { redis } from '../infra/redis';
import { inTurnBatch } from '../db/redisBatch';
import type { RunOutcome, RunResponse } from '../domain/runs';

/**
 * A stream's life is set to at least this many seconds, never shortened: a stream kept for a run that
 * waits for people (expireIn) keeps that life when a later step writes to it. (EXPIRE's GT and NX
 * flags need Redis 7; the service supports 6.2.)
 */
const KEEP_AT_LEAST = "if redis.call('TTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return 0";

type WithKeepAtLeast = Redis & { aesKeepAtLeast(key: string, seconds: number): Promise<number> };

function withKeepAtLeast(client: Redis): WithKeepAtLeast {
  if (!('aesKeepAtLeast' in client)) client.defineCommand('aesKeepAtLeast', { numberOfKeys: 1, lua: KEEP_AT_LEAST });
  return client as WithKeepAtLeast;
}

/**
 * Appends events to a run's Redis stream. Every command goes in the process's batch for this turn of
 * the event loop (db/redisBatch.ts), and batches go out in order on one connection, so callers fire
 * deltas without waiting and await only flush() before the run moves on; an announcement always
 * follows the events emitted before it.
 */
export class RunEvents {
  private last: Promise<unknown> = Promise.resolve();
  private expirySet = false;
  private readonly key: string;

  constructor(private readonly runId: string) {
    this.key = runEventsKey(runId);
    // Defined before any batch this run's commands join is opened (a pipeline takes its client's scripts when made).
    withKeepAtLeast(redis());
  }

  emit(type: StreamEventType, data: unknown): void {
    const firstWrite = !this.expirySet;
    this.expirySet = true;
    this.send(`run event ${type} not written`, (pipeline) => {
      pipeline.xadd(this.key, 'MAXLEN', '~', String(RUN_EVENTS_MAX_LEN), '*', 'e', type, 'd', JSON.stringify(data));
      if (firstWrite) (pipeline as unknown as WithKeepAtLeast).aesKeepAtLeast(this.key, RUN_EVENTS_TTL_S);
      // The API relaying the stream reads it when told (unheard, it reads it within a second anyway).
      pipeline.publish(runChannel(this.runId), STREAM_MOVED);
    });
  }

  /** Sets the stream's life to `seconds` from now, longer or shorter (after the events emitted so far). */
  expireIn(seconds: number): void {
    this.send('run event stream expiry not set', (pipeline) => pipeline.expire(this.key, seconds));
  }

  /** Publishes the run's committed settlement to whichever API instance waits to answer it (the stream's terminal event is for streams). */
  announceSettlement(outcome: RunOutcome): void {
    // Unheard, the waiting API answers from the workflow's outcome instead, a little later.
    this.send('run settlement not announced', (pipeline) => pipeline.publish(runChannel(this.runId), JSON.stringify(outcome)));
  }

  /** Tells the API waiting to answer the run that it waits for people now (a non-streamed request answers 202). */
  announceWaiting(): void {
    // Unheard, the waiting request answers 202 when its bounded wait ends instead.
    this.send('run waiting not announced', (pipeline) => pipeline.publish(runChannel(this.runId), JSON.stringify(WAITING)));
  }

  /** A lost event or announcement is survivable (the API emits the terminal event from the run's outcome); a run failed because of one is not. */
  private send(failure: string, queue: (pipeline: ChainableCommander) => void): void {
    const sent = inTurnBatch(queue).catch((err) => logger.warn({ err: String(err), run_id: this.runId }, failure));
    this.last = Promise.all([this.last, sent]);
  }

  async flush(): Promise<void> {
    await this.last;
  }

  /** Whether the run's stream begins with an event of this type (an earlier attempt announced the run). */
  async startsWith(type: StreamEventType): Promise<boolean> {
    const [first] = await redis().xrange(runEventsKey(this.runId), '-', '+', 'COUNT', 1);
    return first?.[1][1] === type;
  }

  /** The run as its stream's response.completed event gave it, when the stream ends with one. */
  async completedRun(): Promise<RunResponse | undefined> {
    const [last] = await redis().xrevrange(runEventsKey(this.runId), '+', '-', 'COUNT', 1);
    return last?.[1][1] === 'response.completed' ? (JSON.parse(last[1][3]) as RunResponse) : undefined;
  }

  /** The text each attempt of one model call has streamed so far, by attempt number. */
  async streamedText(call: number): Promise<Map<number, string>> {
    const byAttempt = new Map<number, string>();
    for (const [, [, type, , data]] of await redis().xrange(runEventsKey(this.runId), '-', '+')) {
      if (!type.startsWith('response.output_')) continue;
      const delta = JSON.parse(data) as { call?: number; attempt?: number; delta?: string };
      if (delta.call !== call) continue;
      const attempt = delta.attempt ?? 1;
      byAttempt.set(attempt, (byAttempt.get(attempt) ?? '') + (delta.delta ?? ''));
    }
    return byAttempt;
  }
}
