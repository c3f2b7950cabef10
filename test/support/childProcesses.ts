import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../workers/temporalDevServer';
import { until } from './stack';

/**
 * A worker or an API in a process of its own, run compiled exactly as deployed (npm test builds
 * dist/), with environment overrides: a test can point it at a dependency through a proxy it cuts
 * (test/support/tcpProxy.ts), kill it, and read what it logged.
 */
export interface Child {
  process: ChildProcess;
  /** Every JSON log line it wrote so far. */
  logs: Array<{ msg?: string; [field: string]: unknown }>;
  /** Resolves once it has logged a line with this message (counting from `from`, an index into logs). */
  logged(msg: string, from?: number): Promise<void>;
  stop(): Promise<void>;
}

const DIST = path.join(__dirname, '../../dist');

function spawnChild(script: string, args: string[], env: Record<string, string>): Child {
  if (!existsSync(script)) throw new Error(`${script} is missing: run npm run build first (npm test does)`);
  // Warnings included: an outage is logged at warn.
  const child = fork(script, args, { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const logs: Child['logs'] = [];
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line));
      } catch {
        // Not a log line (a library's own output).
      }
    }
  });
  return {
    process: child,
    logs,
    logged: (msg, from = 0) => until(async () => (logs.slice(from).some((l) => l.msg === msg) ? true : undefined), `the child to log "${msg}"`, 90).then(() => undefined),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

/** A worker process polling `queue` only, so the test decides which worker runs what it starts there. */
export async function childWorker(queue: string, env: Record<string, string> = {}): Promise<Child> {
  const child = spawnChild(path.join(DIST, 'test/stack/childWorker.js'), [queue], env);
  await new Promise<void>((resolve, reject) => {
    child.process.once('message', () => resolve());
    child.process.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  return child;
}

/** An API process (`npm run start:api`) on a free port; `url` once it answers /healthz. */
export async function childApi(env: Record<string, string> = {}): Promise<Child & { url: string }> {
  const port = await freePort();
  const child = spawnChild(path.join(DIST, 'api/server.js'), [], { PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  await until(async () => ((await fetch(`${url}/healthz`).catch(() => undefined))?.ok ? true : undefined), 'the API process to listen');
  return { ...child, url };
}
