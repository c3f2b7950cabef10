import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { heartbeating, pacedHeartbeat } from '../activities/bounded';
import { confirmedCancel } from '../activities/model';
import { CANCEL_CONFIRM_FIRST_MS, HEARTBEAT_INTERVAL_MS, MODEL_HEARTBEAT_TIMEOUT_MS } from '../domain/timings';

// Jest's clock, moved by the test: each heartbeat's time is exact, however busy the machine.
beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An activity environment whose attempt Temporal scheduled `scheduledAgoMs` ago, and when each of its
 * heartbeats came (ms from now), filled on as they come.
 */
function heartbeatClock(scheduledAgoMs = 0): { env: MockActivityEnvironment; at: number[] } {
  // Quiet: an attempt failed on purpose is not news.
  const env = new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() - scheduledAgoMs }, { logger: new DefaultLogger('ERROR') });
  const started = Date.now();
  const at: number[] = [];
  env.on('heartbeat', () => at.push(Date.now() - started));
  return { env, at };
}

/** Runs work lasting `ms` inside heartbeating() in an activity context: when each heartbeat came. */
async function heartbeatsOf(ms: number, scheduledAgoMs = 0): Promise<number[]> {
  const { env, at } = heartbeatClock(scheduledAgoMs);
  const done = env.run(() => heartbeating(() => pause(ms)));
  await jest.advanceTimersByTimeAsync(ms);
  await done;
  return at;
}

describe('a cancellable activity', () => {
  it('sends no heartbeat when it ends within one interval: the server counts the timeout from its start', async () => {
    expect(await heartbeatsOf(HEARTBEAT_INTERVAL_MS - 1)).toEqual([]);
  });

  it('heartbeats once per interval while it runs, and not after it ends', async () => {
    const at = await heartbeatsOf(2 * HEARTBEAT_INTERVAL_MS + 300);
    expect(at).toEqual([HEARTBEAT_INTERVAL_MS, 2 * HEARTBEAT_INTERVAL_MS]);
    await jest.advanceTimersByTimeAsync(5 * HEARTBEAT_INTERVAL_MS);
    expect(at).toHaveLength(2);
  });

  it('counts its first interval from when Temporal scheduled it: a call whose code started late is not timed out', async () => {
    // Dispatched eagerly, a call is started (its heartbeat timeout running) when it is scheduled.
    expect(await heartbeatsOf(HEARTBEAT_INTERVAL_MS, 2_000)).toEqual([HEARTBEAT_INTERVAL_MS - 2_000]);
    // Its code began more than an interval late: a heartbeat at once, then one per interval.
    expect(await heartbeatsOf(HEARTBEAT_INTERVAL_MS + 300, 7_000)).toEqual([0, HEARTBEAT_INTERVAL_MS]);
  });

  it('never waits longer than an interval for its first heartbeat, whatever the clocks say', async () => {
    expect(await heartbeatsOf(HEARTBEAT_INTERVAL_MS + 300, -60_000)).toEqual([HEARTBEAT_INTERVAL_MS]);
  });
});

describe('a loop that heartbeats at each turn', () => {
  it('heartbeats at its first turn, then at the first turn after each interval', async () => {
    const { env, at } = heartbeatClock();
    await env.run(async () => {
      const heartbeat = pacedHeartbeat(Context.current(), 1000);
      for (const wait of [0, 400, 599, 1, 999, 1]) {
        await jest.advanceTimersByTimeAsync(wait);
        heartbeat();
      }
    });
    expect(at).toEqual([0, 1000, 2000]);
  });
});

describe('a model call the API announced cancelled', () => {
  it("asks for Temporal's cancel at once, then at doubling intervals until it comes, then stops asking", async () => {
    const { env, at } = heartbeatClock();
    const first = CANCEL_CONFIRM_FIRST_MS;
    const done = env.run(() => confirmedCancel(Context.current()));
    await jest.advanceTimersByTimeAsync(7 * first + 1);
    // The workflow has asked for the cancel: the heartbeat's answer carries it.
    env.cancel();
    await done;
    expect(at).toEqual([0, first, 3 * first, 7 * first]);
    await jest.advanceTimersByTimeAsync(MODEL_HEARTBEAT_TIMEOUT_MS);
    expect(at).toHaveLength(4);
  });

  it('fails its attempt when Temporal never confirms the cancel within a heartbeat timeout', async () => {
    const { env } = heartbeatClock();
    const done = env.run(() => confirmedCancel(Context.current()));
    const failed = expect(done).rejects.toMatchObject({ type: 'cancel_unconfirmed' });
    await jest.advanceTimersByTimeAsync(MODEL_HEARTBEAT_TIMEOUT_MS);
    await failed;
  });
});
