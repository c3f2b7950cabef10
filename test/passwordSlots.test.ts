import { ServiceError } from '../domain/errors';
import { withPasswordSlot } from '../api/dashboard/passwordSlots';

describe('password hashing slots', () => {
  it('runs two hashes at once, queues eight, refuses the rest with 429, and frees every slot after', async () => {
    let running = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const hash = () =>
      withPasswordSlot(async () => {
        most = Math.max(most, ++running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return 'hashed';
      });
    const accepted = Array.from({ length: 10 }, hash);
    await expect(hash()).rejects.toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': '1' } });
    await expect(hash()).rejects.toBeInstanceOf(ServiceError);
    // Release in turn: each finished hash hands its slot to the next waiter.
    for (let done = 0; done < 10; done++) {
      await new Promise((r) => setImmediate(r));
      releases.shift()!();
    }
    await expect(Promise.all(accepted)).resolves.toEqual(Array(10).fill('hashed'));
    expect(most).toBe(2);
    // All slots are free again.
    const again = Array.from({ length: 10 }, hash);
    for (let done = 0; done < 10; done++) {
      await new Promise((r) => setImmediate(r));
      releases.shift()!();
    }
    await expect(Promise.all(again)).resolves.toHaveLength(10);
  });
});
