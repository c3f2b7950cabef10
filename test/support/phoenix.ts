import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../workers/temporalDevServer';
import { notTheApi } from '../stack/contractCheck';
import { until } from './stack';

/** What Phoenix's REST API answers of a span (GET /v1/projects/{project}/spans). */
export interface PhoenixSpan {
  name: string;
  context: { trace_id: string; span_id: string };
  span_kind: string;
  parent_id: string | null;
  attributes: Record<string, unknown>;
}

export interface Phoenix {
  /** Its HTTP port: the UI, the REST API and OTLP/HTTP (protobuf) at /v1/traces. */
  httpUrl: string;
  /** Its OTLP/gRPC collector. */
  grpcUrl: string;
  /** The project's spans of one trace, as Phoenix stored them. */
  spans(project: string, traceId: string): Promise<PhoenixSpan[]>;
}

const PHOENIX = path.join(__dirname, '../../.tools/phoenix/bin/phoenix');

/**
 * Arize Phoenix (`phoenix serve`, installed by `workers/setup.sh --test`) on loopback ports of its
 * own, its database in a directory of its own, for the file's tests; stopped and removed after them.
 * It may take a while to start: the tests wait for its health, never for a time.
 */
export function usePhoenix(): Phoenix {
  let child: ChildProcess | undefined;
  let workingDir = '';
  const phoenix: Phoenix = {
    httpUrl: '',
    grpcUrl: '',
    async spans(project, traceId) {
      const res = await fetch(`${phoenix.httpUrl}/v1/projects/${encodeURIComponent(project)}/spans?trace_id=${traceId}&limit=1000`);
      // The project exists once its first span has arrived.
      if (res.status === 404) return [];
      if (!res.ok) throw new Error(`Phoenix answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { data: PhoenixSpan[] }).data;
    },
  };
  beforeAll(async () => {
    if (!existsSync(PHOENIX)) throw new Error(`${PHOENIX} is missing: run workers/setup.sh --test (npm test does)`);
    const [port, grpcPort] = [await freePort(), await freePort()];
    workingDir = mkdtempSync(path.join(tmpdir(), 'phoenix-'));
    child = spawn(PHOENIX, ['serve'], {
      env: { ...process.env, PHOENIX_HOST: '127.0.0.1', PHOENIX_PORT: String(port), PHOENIX_GRPC_PORT: String(grpcPort), PHOENIX_WORKING_DIR: workingDir, PHOENIX_TELEMETRY_ENABLED: 'false' },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    phoenix.httpUrl = `http://127.0.0.1:${port}`;
    phoenix.grpcUrl = `http://127.0.0.1:${grpcPort}`;
    notTheApi(phoenix.httpUrl);
    const exited = new Promise<never>((_, reject) => child!.once('exit', (code) => reject(new Error(`phoenix serve exited with ${code}`))));
    await Promise.race([exited, until(async () => ((await fetch(`${phoenix.httpUrl}/healthz`).catch(() => undefined))?.ok ? true : undefined), 'Phoenix to answer /healthz', 180)]);
  }, 200_000);
  afterAll(() => {
    child?.kill('SIGKILL');
    if (workingDir) rmSync(workingDir, { recursive: true, force: true });
  });
  return phoenix;
}
