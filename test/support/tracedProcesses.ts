import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../../infra/payloadCodec';
import { answers, freePort, startDevServer } from '../../workers/temporalDevServer';
import { until } from './stack';

/**
 * The API and a worker as deployed (compiled, processes of their own, with the environment under
 * test: tracing is read once per process), on a Temporal server of their own so no other worker takes
 * their runs. Stopped with SIGTERM, as a deploy stops them, each flushes the spans it still batches.
 */
const API = path.join(__dirname, '../../dist/api/server.js');
const WORKER = path.join(__dirname, '../../dist/test/stack/childWorker.js');

export interface TracedProcesses {
  url: string;
  /** Waits for the run's workflow to end: its last spans (the run's own) end with its last task, just after the API's answer. */
  settled(runId: string): Promise<void>;
  /** SIGTERM to both; resolves with their exit codes once they have flushed and exited. */
  stop(): Promise<[number | null, number | null]>;
}

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

/** A Temporal dev server for traced processes, and a way to start them on it; `close()` kills what is left. */
export function useTracedProcesses(): { start(env: Record<string, string | undefined>): Promise<TracedProcesses> } {
  const children: ChildProcess[] = [];
  let temporal: { address: string; process: ChildProcess };
  beforeAll(async () => {
    for (const file of [API, WORKER]) if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (npm test does)`);
    temporal = await startDevServer();
  });
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    temporal?.process.kill('SIGKILL');
  });

  return {
    async start(env) {
      const processEnv = { ...process.env, TEMPORAL_ADDRESS: temporal.address, OTEL_TRACES_EXPORTER: undefined, ...env };
      const worker = fork(WORKER, ['agent-runs'], { env: processEnv, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      children.push(worker);
      await new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
      });
      const port = await freePort();
      const api = spawn(process.execPath, [API], { env: { ...processEnv, PORT: String(port), SHUTDOWN_DELAY_MS: '0' }, stdio: ['ignore', 'ignore', 'inherit'] });
      children.push(api);
      await until(async () => ((await answers(port)) ? true : undefined), 'the API process to listen');
      return {
        url: `http://127.0.0.1:${port}`,
        async settled(runId) {
          const client = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter });
          try {
            await client.workflow.getHandle(runId).result();
          } finally {
            await client.connection.close();
          }
        },
        async stop() {
          api.kill('SIGTERM');
          worker.kill('SIGTERM');
          return [await exited(api), await exited(worker)];
        },
      };
    },
  };
}
