import { randomUUID } from 'node:crypto';
import { closeRedis, redis } from '../infra/redis';
import { inTurnBatch } from '../db/redisBatch';

const key = () => `test:batch:${randomUUID()}`;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => jest.restoreAllMocks());
afterAll(closeRedis);

describe('commands queued in one turn of the event loop', () => {
  it('go to Redis as one pipeline, in the order queued, each caller getting the replies to its own commands', async () => {
    const list = key();
    const pipelines = jest.spyOn(redis(), 'pipeline');
    const [a, bc, all] = await Promise.all([
      inTurnBatch((p) => p.rpush(list, 'a')),
      inTurnBatch((p) => p.rpush(list, 'b').rpush(list, 'c')),
      inTurnBatch((p) => p.lrange(list, 0, -1)),
    ]);
    expect(pipelines).toHaveBeenCalledTimes(1);
    expect(a).toEqual([1]);
    expect(bc).toEqual([2, 3]);
    expect(all).toEqual([['a', 'b', 'c']]);
    await redis().del(list);
  });

  it('fail only the caller whose command failed', async () => {
    const text = key();
    await redis().set(text, 'not a number');
    const [failed, fine] = await Promise.allSettled([inTurnBatch((p) => p.incr(text)), inTurnBatch((p) => p.get(text))]);
    expect(failed).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/not an integer/) }) });
    expect(fine).toEqual({ status: 'fulfilled', value: ['not a number'] });
    await redis().del(text);
  });

  it('queued in later turns go in later pipelines, still in order', async () => {
    const list = key();
    const pipelines = jest.spyOn(redis(), 'pipeline');
    const first = inTurnBatch((p) => p.rpush(list, '1'));
    await nextTurn();
    const second = inTurnBatch((p) => p.rpush(list, '2'));
    expect(await Promise.all([first, second])).toEqual([[1], [2]]);
    expect(pipelines).toHaveBeenCalledTimes(2);
    expect(await redis().lrange(list, 0, -1)).toEqual(['1', '2']);
    await redis().del(list);
  });
});
