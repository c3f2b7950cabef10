import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../workers/temporalDevServer';

/**
 * The MCP project's reference server (`@modelcontextprotocol/server-everything`, from npm) in its
 * Streamable HTTP mode, on a loopback port of its own: a real remote MCP server for an agent's tools.
 * It takes its port from PORT only; it is given no other environment (its `get-env` tool shows it).
 */
export interface EverythingServer {
  url: string;
  /** Stops it (its sessions with it); `start` brings it back on the same port, knowing none of them. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

const BIN = require.resolve('@modelcontextprotocol/server-everything/package.json').replace(/package\.json$/, 'dist/index.js');

export async function everythingServer(): Promise<EverythingServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const started = spawn(process.execPath, [BIN, 'streamableHttp'], { env: { PORT: String(port), PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'ignore', 'pipe'] });
      child = started;
      let said = '';
      started.stderr!.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (/listening on port/.test(said)) resolve();
        if (/Failed to start/.test(said)) reject(new Error(said));
      });
      started.once('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${said}`)));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolve();
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  await start();
  return { url: `http://127.0.0.1:${port}/mcp`, stop, start };
}
