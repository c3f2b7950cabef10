import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DEVELOPMENT_SIGNING_SECRET, resetConfig } from '../infra/config';
import { checkStartup, secretProblems, StartupRefusal } from '../infra/startupChecks';
import { answers, freePort } from '../workers/temporalDevServer';
import { until } from './support/stack';

/**
 * Outside DEVELOPMENT_MODE the API and the worker refuse to start on a secret anyone can read, guess
 * or derive, naming the variable; and without METRICS_TOKEN they serve no metrics. The test stack
 * runs in development mode (test/stack/globalSetup.ts): the processes here are started without it.
 */
const API = path.join(__dirname, '../dist/api/server.js');
const WORKER = path.join(__dirname, '../dist/workers/main.js');
const CHILD_WORKER = path.join(__dirname, '../dist/test/stack/childWorker.js');

const strongSecret = () => randomBytes(32).toString('hex');
const keyRing = (...keys: Buffer[]) => keys.map((k, i) => `k${i + 1}:${k.toString('base64')}`).join(',');
const GOOD = () => ({ SIGNING_SECRET: strongSecret(), PAYLOAD_ENCRYPTION_KEYS: keyRing(randomBytes(32)) });

/** This process's environment without development mode, secrets or metrics settings, plus `env`. */
function production(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  for (const name of ['DEVELOPMENT_MODE', 'SIGNING_SECRET', 'PAYLOAD_ENCRYPTION_KEYS', 'METRICS_TOKEN', 'WORKER_METRICS_PORT', 'OTEL_TRACES_EXPORTER']) delete base[name];
  return { ...base, ...env };
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Output (stdout and stderr) of a process, as it comes. */
function collect(child: ChildProcess): { text: string } {
  const out = { text: '' };
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => (out.text += chunk.toString()));
  return out;
}

/** Runs `script` until it exits (or 30 s pass: then it is killed and the exit code is null). */
async function runToExit(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const out = collect(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output: out.text };
}

beforeAll(() => {
  for (const file of [API, WORKER, CHILD_WORKER]) if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (npm test does)`);
});

describe('secretProblems', () => {
  it('finds none in a random SIGNING_SECRET of 32+ characters and a key ring of random 32-byte keys', () => {
    expect(secretProblems(GOOD())).toEqual([]);
    expect(secretProblems({ SIGNING_SECRET: randomBytes(24).toString('base64'), PAYLOAD_ENCRYPTION_KEYS: keyRing(randomBytes(32), randomBytes(32)) })).toEqual([]);
    // The operator contract names SIGNING_SECRET alone: unset, the payload key is derived from it.
    expect(secretProblems({ SIGNING_SECRET: GOOD().SIGNING_SECRET })).toEqual([]);
  });

  it.each([
    ['missing', undefined, /SIGNING_SECRET is not set/],
    ['empty', '', /SIGNING_SECRET is not set/],
    ['the development value', DEVELOPMENT_SIGNING_SECRET, /SIGNING_SECRET is a published default/],
    ["the old compose default", 'change-me', /SIGNING_SECRET is a published default/],
    ['a long placeholder', 'please-CHANGE_ME-before-going-to-production', /SIGNING_SECRET is a published default/],
    ['short', randomBytes(15).toString('hex'), /SIGNING_SECRET is 30 characters long; it must be at least 32/],
    ['one character repeated', 'x'.repeat(64), /SIGNING_SECRET repeats/],
  ])('refuses a SIGNING_SECRET that is %s', (_what, secret, message) => {
    const problems = secretProblems({ ...GOOD(), SIGNING_SECRET: secret });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  const devKey = createHash('sha256').update(`payload-encryption:${DEVELOPMENT_SIGNING_SECRET}`).digest();
  it.each([
    ['no key at all', ' , ', /PAYLOAD_ENCRYPTION_KEYS names no key/],
    ['a short key', keyRing(randomBytes(16)), /PAYLOAD_ENCRYPTION_KEYS key "k1" is 16 bytes long; each key must be 32/],
    ['a long key', keyRing(randomBytes(48)), /PAYLOAD_ENCRYPTION_KEYS key "k1" is 48 bytes long/],
    ['a key without its id', randomBytes(32).toString('base64'), /PAYLOAD_ENCRYPTION_KEYS entry #1 is not kid:base64/],
    ['a key that is not base64', 'k1:not base64 at all!', /PAYLOAD_ENCRYPTION_KEYS entry "k1" is not kid:base64/],
    ['the development key', `dev:${devKey.toString('base64')}`, /PAYLOAD_ENCRYPTION_KEYS key "dev" is the development key/],
    ['all zeros', keyRing(Buffer.alloc(32)), /PAYLOAD_ENCRYPTION_KEYS key "k1" repeats/],
    ['a weak old key behind a good one', keyRing(randomBytes(32), randomBytes(8)), /PAYLOAD_ENCRYPTION_KEYS key "k2" is 8 bytes long/],
  ])('refuses PAYLOAD_ENCRYPTION_KEYS with %s', (_what, keys, message) => {
    const problems = secretProblems({ ...GOOD(), PAYLOAD_ENCRYPTION_KEYS: keys });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });
});

describe('checkStartup', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of ['DEVELOPMENT_MODE', 'SIGNING_SECRET', 'PAYLOAD_ENCRYPTION_KEYS', 'METRICS_TOKEN']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    resetConfig();
  });
  const withEnv = (env: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetConfig();
  };

  it('lets development secrets through in development mode, and good secrets through without it', () => {
    withEnv({ DEVELOPMENT_MODE: '1', SIGNING_SECRET: undefined, PAYLOAD_ENCRYPTION_KEYS: undefined });
    expect(() => checkStartup('api')).not.toThrow();
    withEnv({ DEVELOPMENT_MODE: undefined, ...GOOD() });
    expect(() => checkStartup('api')).not.toThrow();
    expect(() => checkStartup('worker')).not.toThrow();
  });

  it('refuses every weak secret at once outside development mode, naming each variable and the way out', () => {
    withEnv({ DEVELOPMENT_MODE: undefined, SIGNING_SECRET: 'change-me', PAYLOAD_ENCRYPTION_KEYS: 'k1:c2hvcnQ=' });
    let refusal: unknown;
    try {
      checkStartup('worker');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(StartupRefusal);
    expect((refusal as StartupRefusal).problems).toEqual([expect.stringMatching(/^SIGNING_SECRET /), expect.stringMatching(/^PAYLOAD_ENCRYPTION_KEYS /)]);
    expect((refusal as Error).message).toMatch(/^refusing to start: SIGNING_SECRET .*DEVELOPMENT_MODE=1/);
    // "0" is not development mode.
    withEnv({ DEVELOPMENT_MODE: '0' });
    expect(() => checkStartup('api')).toThrow(StartupRefusal);
  });
});

describe('the processes as deployed, outside development mode', () => {
  const good = GOOD();
  it.each([
    ['API', 'without SIGNING_SECRET', API, {}, 'SIGNING_SECRET is not set'],
    ['API', 'with the development SIGNING_SECRET', API, { SIGNING_SECRET: DEVELOPMENT_SIGNING_SECRET }, 'SIGNING_SECRET is a published default'],
    ['API', 'with the old compose default', API, { SIGNING_SECRET: 'change-me' }, 'SIGNING_SECRET is a published default'],
    ['API', 'with a short SIGNING_SECRET', API, { SIGNING_SECRET: 'Zq3#kT9!vW2@' }, 'SIGNING_SECRET is 12 characters long'],
    ['API', 'with a short payload key', API, { SIGNING_SECRET: good.SIGNING_SECRET, PAYLOAD_ENCRYPTION_KEYS: keyRing(randomBytes(16)) }, 'PAYLOAD_ENCRYPTION_KEYS key \\"k1\\" is 16 bytes long'],
    ['worker', 'without SIGNING_SECRET', WORKER, { PAYLOAD_ENCRYPTION_KEYS: good.PAYLOAD_ENCRYPTION_KEYS }, 'SIGNING_SECRET is not set'],
    ['worker', 'with a short payload key', WORKER, { SIGNING_SECRET: good.SIGNING_SECRET, PAYLOAD_ENCRYPTION_KEYS: keyRing(randomBytes(16)) }, 'PAYLOAD_ENCRYPTION_KEYS key \\"k1\\" is 16 bytes long'],
  ])('the %s refuses to start %s, naming the variable', async (_name, _what, script, env, message) => {
    const port = await freePort();
    // The worker's own entry with every queue: were it to start, it would poll them (and be killed after 30 s).
    const { code, output } = await runToExit(script, script === WORKER ? ['--queues', 'agent-runs'] : [], production({ PORT: String(port), ...env }));
    expect(output).toContain('refusing to start');
    expect(output).toContain(message);
    expect(code).toBe(1);
  });
});

describe('metrics without METRICS_TOKEN', () => {
  /** A worker process (as `npm run start:worker` runs it) on a task queue no one uses, once it polls. */
  async function startedWorker(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; out: { text: string } }> {
    const child = fork(CHILD_WORKER, ['startup-checks-test'], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    children.push(child);
    const out = collect(child);
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`worker exited with ${code}: ${out.text}`)));
    });
    return { child, out };
  }
  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

  it('an API with good secrets starts, and GET /metrics is off (501) until METRICS_TOKEN is set', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [API], { env: production({ ...GOOD(), PORT: String(port), SHUTDOWN_DELAY_MS: '0' }), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const out = collect(child);
    await until(async () => ((await answers(port)) ? true : child.exitCode !== null ? Promise.reject(new Error(out.text)) : undefined), 'the API process to listen');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(501);
    expect(((await metrics.json()) as { error: unknown }).error).toEqual(expect.objectContaining({ code: 'not_implemented', message: expect.stringContaining('METRICS_TOKEN') }));
    expect(out.text).toContain('metrics are off: GET /metrics answers 501 until METRICS_TOKEN is set');
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
  });

  it('a worker with good secrets does not open WORKER_METRICS_PORT; in development mode, without any secret, it does', async () => {
    const [closed, open] = [await freePort(), await freePort()];
    const [production_, development] = await Promise.all([
      startedWorker(production({ ...GOOD(), WORKER_METRICS_PORT: String(closed) })),
      startedWorker(production({ DEVELOPMENT_MODE: '1', WORKER_METRICS_PORT: String(open) })),
    ]);
    try {
      // The SDK's exporter listens before the worker polls: the port that is open answers at once.
      expect((await fetch(`http://127.0.0.1:${open}/metrics`)).status).toBe(200);
      expect(await answers(closed)).toBe(false);
      expect(production_.out.text).toContain('metrics are off: WORKER_METRICS_PORT is not opened until METRICS_TOKEN is set');
      expect(development.out.text).toContain('DEVELOPMENT_MODE: starting with development secrets');
    } finally {
      production_.child.kill('SIGTERM');
      development.child.kill('SIGTERM');
      await Promise.all([exited(production_.child), exited(development.child)]);
    }
  });
});
