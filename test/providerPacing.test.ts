import { randomUUID } from 'node:crypto';
import { ALIVE_MS, LEASE_MS, pacingScripts, type Limits } from '../activities/providers/pacing';
import { closeAll } from './support/stack';

/**
 * A provider's rpm and slots (activities/providers/pacing.ts), against the real Redis with a clock of
 * the test's own: each script is given `now`, so a bucket refills and a lease ends exactly when the
 * test says, however fast the machine. Each test has provider names of its own.
 */
const T = 1_000_000_000;
const providerName = () => `pacing-${randomUUID().slice(0, 8)}`;

afterAll(closeAll);

/** One call of `share`, asking for a slot again and again as its worker would, at the times the test gives. */
function caller(provider: string, limits: Limits, share = 'ws1') {
  const call = { member: '', share, ticket: randomUUID() };
  return {
    async take(now: number): Promise<boolean> {
      const answer = await pacingScripts.take(provider, call, limits, now);
      call.member = answer.member;
      return answer.go;
    },
    giveBack: (now: number) => pacingScripts.giveBack(provider, call.member, limits, now),
  };
}

describe('rpm', () => {
  it('lets calls go at the rate it names, at most a second of them at once', async () => {
    const provider = providerName();
    const limits = { rpm: 120 };
    const calls = [1, 2, 3, 4].map(() => caller(provider, limits));
    // 120 a minute: two a second, both at once.
    expect(await calls[0].take(T)).toBe(true);
    expect(await calls[1].take(T)).toBe(true);
    expect(await calls[2].take(T)).toBe(false);
    expect(await calls[2].take(T + 499)).toBe(false);
    expect(await calls[2].take(T + 501)).toBe(true);
    expect(await calls[3].take(T + 501)).toBe(false);
    expect(await calls[3].take(T + 1001)).toBe(true);
  });

  it('says how long until the bucket holds a call', async () => {
    const provider = providerName();
    const first = { member: '', share: 'ws1', ticket: 'a' };
    const second = { member: '', share: 'ws1', ticket: 'b' };
    await pacingScripts.take(provider, first, { rpm: 60 }, T);
    expect(await pacingScripts.take(provider, second, { rpm: 60 }, T)).toMatchObject({ go: false, refillMs: 1000 });
  });
});

describe('slots', () => {
  it('gives a dead worker\'s slot back when its lease ends', async () => {
    const provider = providerName();
    const limits = { maxConcurrency: 1 };
    const [dead, waiting] = [caller(provider, limits), caller(provider, limits)];
    expect(await dead.take(T)).toBe(true);
    // The waiting call asks again as its worker does (within ALIVE_MS), and gets nothing until the lease ends.
    for (let at = T; at < T + LEASE_MS; at += ALIVE_MS / 2) expect(await waiting.take(at)).toBe(false);
    expect(await waiting.take(T + LEASE_MS)).toBe(true);
  });

  it('passes over a waiting call whose worker stopped asking', async () => {
    const provider = providerName();
    const limits = { maxConcurrency: 1 };
    const [running, gone, alive] = [caller(provider, limits), caller(provider, limits), caller(provider, limits)];
    expect(await running.take(T)).toBe(true);
    expect(await gone.take(T)).toBe(false);
    expect(await alive.take(T + 1)).toBe(false);
    // The slot freed is handed, in the same step, to the first call still asking.
    await running.giveBack(T + ALIVE_MS + 1);
    expect(await alive.take(T + ALIVE_MS + 2)).toBe(true);
    expect(await gone.take(T + ALIVE_MS + 2)).toBe(false);
  });

  it('hands slots by turns of workspaces, not by arrival', async () => {
    const provider = providerName();
    const limits = { maxConcurrency: 1 };
    const a = [1, 2, 3, 4].map(() => caller(provider, limits, 'a'));
    const b = caller(provider, limits, 'b');
    expect(await a[0].take(T)).toBe(true);
    for (const call of a.slice(1)) expect(await call.take(T)).toBe(false);
    expect(await b.take(T)).toBe(false);
    const order: string[] = [];
    const all = new Map([...a.map((c, i) => [`a${i}`, c] as const), ['b', b] as const]);
    let holder = a[0];
    for (let at = T + 1; all.size > 1; at++) {
      await holder.giveBack(at);
      all.delete([...all].find(([, c]) => c === holder)![0]);
      for (const [name, call] of all) {
        if (await call.take(at)) {
          order.push(name);
          holder = call;
        }
      }
    }
    // a's second call had joined the turn being served before b arrived; b goes next, then a's others.
    expect(order).toEqual(['a1', 'b', 'a2', 'a3']);
  });
});
