import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import path from 'node:path';

const TEMPORAL = path.resolve(__dirname, '../../.tools/bin/temporal');
export const SEARCH_ATTRIBUTE_FLAGS = ['WorkspaceId', 'AgentId', 'Kind'].flatMap((name) => ['--search-attribute', `${name}=Keyword`]);

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

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** An in-memory Temporal dev server from the pip-installed CLI, on free ports, headless. */
export async function startTemporal(): Promise<{ address: string; process: ChildProcess }> {
  const [port, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    TEMPORAL,
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error', ...SEARCH_ATTRIBUTE_FLAGS],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // Its log is read only when it fails to start; at shutdown it complains about closing shards.
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited with ${child.exitCode}: ${log}`);
    if (await answers(port)) return { address: `127.0.0.1:${port}`, process: child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`temporal dev server did not start within 30 s: ${log}`);
}
