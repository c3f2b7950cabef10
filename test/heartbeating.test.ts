import { MockActivityEnvironment } from '@temporalio/testing';
import { heartbeating } from '../activities/bounded';
import { HEARTBEAT_INTERVAL_MS } from '../workflows/timings';

// Jest's clock, moved by the test: each heartbeat's time is exact, however busy the machine.
beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs work lasting `ms` inside heartbeating() in an activity context: when each heartbeat came (ms from the start), filled on as they come. */
async function heartbeatsOf(ms: number): Promise<number[]> {
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const at: number[] = [];
  env.on('heartbeat', () => at.push(Date.now() - started));
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
});
