import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/** A fresh clone, a Docker image and CI elsewhere all install with `npm ci`: the lock file must satisfy it, for every platform. */
it('npm ci accepts package.json and package-lock.json as they are', async () => {
  const { stderr } = await promisify(execFile)('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: path.join(__dirname, '..') });
  expect(stderr).not.toMatch(/npm error/);
}, 120_000);
