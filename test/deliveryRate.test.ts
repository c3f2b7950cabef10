import { randomInt } from 'node:crypto';
import { admitDelivery } from '../activities/deliveryRate';
import { closeRedis, redis } from '../infra/redis';

afterAll(() => closeRedis());

interface Admitted {
  merchant: number;
  at: number;
}

/** Deliveries that ask, sleep as told and ask again until admitted, as webhookDelivery's holdBack does. */
async function deliver(partnerId: number, rate: number, merchant: number, count: number, admitted: Admitted[], t0: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      for (;;) {
        const wait = await admitDelivery({ partnerId, merchantId: merchant, deliveryId: `d-${merchant}-${i}`, ratePerSecond: rate });
        if (wait === 0) break;
        await new Promise((r) => setTimeout(r, wait));
      }
      admitted.push({ merchant, at: Date.now() - t0 });
    }),
  );
}

/**
 * The same deliveries on a clock of the test's own: each ask happens at its time, in time order, one at
 * a time, and a held delivery asks again exactly when it was told to. `late` arrives once `afterAdmitted`
 * deliveries have been admitted, at that moment.
 */
async function played(partnerId: number, rate: number, first: { merchant: number; count: number }, late: { merchant: number; count: number; afterAdmitted: number }): Promise<Admitted[]> {
  const asks: { at: number; merchant: number; id: string; seq: number }[] = [];
  let seq = 0;
  const arrive = (merchant: number, count: number, at: number) => {
    for (let i = 0; i < count; i++) asks.push({ at, merchant, id: `d-${merchant}-${i}`, seq: seq++ });
  };
  arrive(first.merchant, first.count, 0);
  const t0 = 1_700_000_000_000;
  const admitted: Admitted[] = [];
  while (asks.length) {
    asks.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const ask = asks.shift()!;
    const wait = await admitDelivery({ partnerId, merchantId: ask.merchant, deliveryId: ask.id, ratePerSecond: rate, nowMs: t0 + ask.at });
    if (wait > 0) {
      asks.push({ ...ask, at: ask.at + wait, seq: seq++ });
      continue;
    }
    admitted.push({ merchant: ask.merchant, at: ask.at });
    if (admitted.length === late.afterAdmitted) arrive(late.merchant, late.count, ask.at);
  }
  return admitted;
}

const partner = () => 1_000_000 + randomInt(1_000_000);

describe('the delivery rate (Redis, without Temporal)', () => {
  it('never admits more than the rate and its one-second burst, and admits every merchant in the end', async () => {
    const p = partner();
    const admitted: Admitted[] = [];
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 60 }, (_, m) => deliver(p, 50, m, 4, admitted, t0)));
    expect(admitted).toHaveLength(240);
    // Counted from before the first ask, the n-th admission comes no sooner than the rate allows past
    // the burst (50 at once, then 50 a second): slowness only makes it later, so no machine's speed
    // can fail this, and a limiter that let more through would. (A few ms for two clocks' rounding.)
    const times = admitted.map((a) => a.at).sort((a, b) => a - b);
    times.forEach((at, i) => expect(at).toBeGreaterThanOrEqual(((i + 1 - 50) / 50) * 1000 - 5));
  });

  it('serves a merchant that arrives beside a backlog before the backlog is through', async () => {
    const p = partner();
    // Played out on the test's own clock, so the order is the limiter's alone, not the timers'.
    const admitted = await played(p, 20, { merchant: 1, count: 60 }, { merchant: 2, count: 4, afterAdmitted: 25 });
    expect(admitted).toHaveLength(64);
    const order = admitted.map((a) => a.merchant);
    // First come, first served would admit the newcomer's 4 after the backlog's 35 still held. Sharing
    // the rate, the two take turns: the backlog gets no more tokens than the newcomer until it is through.
    expect(order.slice(25, order.lastIndexOf(2) + 1).filter((m) => m === 1).length).toBeLessThanOrEqual(4);
    // And it waits for tokens as everyone does: the rate still holds (20 a second after a burst of 20).
    admitted.forEach((a, i) => expect(a.at).toBeGreaterThanOrEqual(((i + 1 - 20) / 20) * 1000));
  });

  it('forgets any number of deliveries that never came back, a bounded number per ask, without failing', async () => {
    const p = partner();
    const queue = `whrate:{${p}}:queue:7`;
    const stale = Array.from({ length: 9000 }, (_, i) => `gone-${i}`);
    // Held deliveries whose time to come back passed long ago (their workflows were terminated).
    for (let i = 0; i < stale.length; i += 1000) {
      const slice = stale.slice(i, i + 1000);
      await redis().zadd(queue, ...slice.flatMap((d) => [1, d]));
      await redis().zadd(`${queue}:due`, ...slice.flatMap((d) => [1, d]));
    }
    await redis().zadd(`whrate:{${p}}:waiting`, 1, '7');
    // More than Lua can unpack at once: cleaned a slice per ask, and the ask is answered each time.
    // (A failing script would hold each ask back and clean nothing.)
    for (let i = 0; i < 50; i++) await admitDelivery({ partnerId: p, merchantId: 7, deliveryId: `new-${i}`, ratePerSecond: 10 });
    expect(await redis().zcard(queue)).toBeLessThan(100);
  });
});
