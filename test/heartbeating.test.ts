import { MockActivityEnvironment } from '@temporalio/testing';
import { heartbeating } from '../activities/bounded';
import { HEARTBEAT_INTERVAL_MS } from '../workflows/timings';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `work` inside heartbeating() in an activity context: when each heartbeat came (ms from the start), filled on as they come. */
async function heartbeatsOf(work: () => Promise<unknown>): Promise<number[]> {
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const at: number[] = [];
  env.on('heartbeat', () => at.push(Date.now() - started));
  await env.run(() => heartbeating(work));
  return at;
}

describe('a cancellable activity', () => {
  it('sends no heartbeat when it ends within one interval: the server counts the timeout from its start', async () => {
    expect(await heartbeatsOf(() => pause(50))).toEqual([]);
  });

  it('heartbeats once per interval while it runs, and not after it ends', async () => {
    const at = await heartbeatsOf(() => pause(2 * HEARTBEAT_INTERVAL_MS + 300));
    expect(at).toHaveLength(2);
    expect(at[0]).toBeGreaterThanOrEqual(HEARTBEAT_INTERVAL_MS - 50);
    await pause(HEARTBEAT_INTERVAL_MS);
    expect(at).toHaveLength(2);
  });
});
