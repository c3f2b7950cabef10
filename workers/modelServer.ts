import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { PROJECT_ROOT } from '../infra/projectRoot';
import { freePort } from './temporalDevServer';

/** The bounded grammar `npm start` asks the embedded model's json_object replies with (MODEL_JSON_OBJECT_GRAMMAR). */
export const JSON_OBJECT_GRAMMAR = path.join(PROJECT_ROOT, 'workers/jsonObject.gbnf');

/**
 * The embedded model server (workers/modelServer.py, from the .tools/ virtualenv that setup.sh fills)
 * on a free loopback port, for the test suite and the bench; workers/stack.sh starts the same script
 * for `npm start`. It takes requests only with `apiKey` as a bearer token (every one but /health).
 * Resolves once it answers /health; one that exits first rejects with its log's end.
 */
export async function startModelServer(slots = 8): Promise<{ url: string; apiKey: string; process: ChildProcess }> {
  const port = await freePort();
  const apiKey = randomBytes(16).toString('hex');
  const child = spawn(path.join(PROJECT_ROOT, '.tools/bin/python'), [path.join(PROJECT_ROOT, 'workers/modelServer.py')], {
    env: { ...process.env, MODEL_SERVER_PORT: String(port), MODEL_SERVER_SLOTS: String(slots), MODEL_SERVER_API_KEY: apiKey },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`model server exited with ${child.exitCode}: ${log}`);
    const health = await fetch(`${url}/health`).catch(() => undefined);
    if (health?.ok) return { url, apiKey, process: child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`model server did not start within 60 s: ${log}`);
}
