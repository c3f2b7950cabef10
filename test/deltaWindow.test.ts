import { DeltaWindow } from '../activities/deltaWindow';

describe('a streamed reply’s delta window', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function window(ms = 50) {
    const sent: string[] = [];
    return { sent, deltas: new DeltaWindow((delta) => sent.push(delta), ms) };
  }

  it('sends a chunk at once when none went in the last window, and the chunks of a window together at its end', () => {
    const { sent, deltas } = window();
    deltas.push('Hel');
    expect(sent).toEqual(['Hel']);
    deltas.push('lo, ');
    jest.advanceTimersByTime(20);
    deltas.push('wor');
    expect(sent).toEqual(['Hel']);
    jest.advanceTimersByTime(30);
    expect(sent).toEqual(['Hel', 'lo, wor']);
    // The window that sent opened another: a chunk within it waits for its end.
    deltas.push('ld');
    jest.advanceTimersByTime(49);
    expect(sent).toEqual(['Hel', 'lo, wor']);
    jest.advanceTimersByTime(1);
    expect(sent).toEqual(['Hel', 'lo, wor', 'ld']);
  });

  it('sends each chunk of a slow reply at once', () => {
    const { sent, deltas } = window();
    for (const chunk of ['a', 'b', 'c']) {
      deltas.push(chunk);
      expect(sent.at(-1)).toBe(chunk);
      // Past the window its send opened, which closes quiet: the next chunk finds none open.
      jest.advanceTimersByTime(100);
    }
    expect(sent).toEqual(['a', 'b', 'c']);
  });

  it('sends what the window holds when the reply ends, and nothing after', () => {
    const { sent, deltas } = window();
    deltas.push('x');
    deltas.push('y');
    deltas.push('z');
    deltas.close();
    expect(sent).toEqual(['x', 'yz']);
    jest.advanceTimersByTime(1_000);
    expect(sent).toEqual(['x', 'yz']);
    expect(jest.getTimerCount()).toBe(0);
  });
});
