import { execFileSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { CancelledFailure } from '@temporalio/activity';
import { extractText } from '../activities/extract';
import { resetConfig } from '../infra/config';
import { htmlBomb } from './support/parserBombs';

/**
 * A parse whose activity is given up (an ingestion or extraction cancelled, its attempt timed out,
 * its worker stopping) is killed at once, not left running to its CPU and wall-time limits.
 */
const parsesOfThisProcess = (): number[] => {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'parseProcess'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
};

beforeAll(() => {
  // Limits the bomb cannot reach here: only the abort can end its parse.
  process.env.PARSE_CPU_S = '600';
  resetConfig();
});

describe('a parse given up', () => {
  it('is killed when its activity is cancelled, and fails as cancelled, not as the file', async () => {
    const controller = new AbortController();
    const reading = (async () => {
      for await (const piece of extractText('html', Readable.from([htmlBomb()]), controller.signal)) void piece;
    })();
    const outcome = reading.then(
      () => 'parsed',
      (err) => err,
    );
    // However long the process takes to start on a loaded machine (jest's timeout bounds the wait).
    while (parsesOfThisProcess().length === 0) await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    expect(await outcome).toBeInstanceOf(CancelledFailure);
    expect(parsesOfThisProcess()).toEqual([]);
  });
});
