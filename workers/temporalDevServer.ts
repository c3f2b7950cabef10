import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import path from 'node:path';
import { PROJECT_ROOT } from '../infra/projectRoot';

/** The Temporal CLI that workers/setup.sh installs from PyPI. */
export const TEMPORAL_CLI = path.join(PROJECT_ROOT, '.tools/bin/temporal');

/** The flags every dev server of the project gets, shared with workers/stack.sh. */
export function devServerFlags(): string[] {
  return readFileSync(path.join(PROJECT_ROOT, 'workers/temporal-dev-server.args'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts TCP connections on the loopback port. */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * An in-memory, headless Temporal dev server on free ports (the test suite's and the bench's), with
 * `namespaces` besides `default`, and its Prometheus metrics at `metrics`. Resolves once its frontend
 * answers; a server that exits first rejects with the end of its log.
 */
export async function startDevServer(namespaces: string[] = []): Promise<{ address: string; metrics: string; process: ChildProcess }> {
  const [port, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    TEMPORAL_CLI,
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error', ...devServerFlags(), ...namespaces.flatMap((n) => ['--namespace', n])],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // Its log is read only when it fails to start; at shutdown it complains about closing shards.
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited with ${child.exitCode}: ${log}`);
    if (await answers(port)) return { address: `127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, process: child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`temporal dev server did not start within 30 s: ${log}`);
}
