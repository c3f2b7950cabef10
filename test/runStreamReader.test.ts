import { runStreams, type StreamEntry } from '../runs/runStreamReader';
import { redis } from '../infra/redis';
import { mintId } from '../domain/ids';
import { runEventsKey } from '../domain/streamEvents';
import { closeAll, until } from './support/stack';

afterAll(closeAll);

const append = (key: string, type: string) => redis().xadd(key, '*', 'e', type, 'd', '{}') as Promise<string>;

describe("the API's stream reader", () => {
  it('gives each follow every entry once and in order, from its place: told of by a notice, or not (a notice lost is made up by the sweep)', async () => {
    const key = runEventsKey(mintId('run'));
    const first = await append(key, 'response.started');
    const fromStart: StreamEntry[] = [];
    const resumed: StreamEntry[] = [];
    const a = runStreams().follow(key, '0-0', (entries) => fromStart.push(...entries));
    const b = runStreams().follow(key, first, (entries) => resumed.push(...entries));
    try {
      await until(async () => (fromStart.length === 1 ? true : undefined), 'the backlog');
      await append(key, 'response.output_text.delta');
      // Told twice (each follow's relay hears the notice): given once to each.
      a.poke();
      b.poke();
      await until(async () => (fromStart.length === 2 && resumed.length === 1 ? true : undefined), 'the entry told of');
      // No notice at all: only the sweep reads it.
      await append(key, 'response.completed');
      await until(async () => (fromStart.length === 3 && resumed.length === 2 ? true : undefined), 'the entry nobody told of');
      expect(fromStart.map((e) => e.type)).toEqual(['response.started', 'response.output_text.delta', 'response.completed']);
      expect(resumed.map((e) => e.type)).toEqual(['response.output_text.delta', 'response.completed']);
    } finally {
      a.close();
      b.close();
      await redis().del(key);
    }
  });
});
