import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { answers, freePort, startDevServer } from '../workers/temporalDevServer';
import { call, providerRequests, tenant, until, useApi, type Tenant } from './support/stack';

/**
 * A run's `trace_id` is the W3C trace id of the request that started it, carried through its
 * workflow and activities to the provider request's `traceparent`; spans leave a process only when
 * OTEL_TRACES_EXPORTER=otlp.
 */
const api = useApi();

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The traceparent of the run's (first) provider request. */
async function providerTraceparent(t: Tenant): Promise<string> {
  const [sent] = await providerRequests(t.model);
  return String(sent.headers.traceparent);
}

describe('a run started by a request', () => {
  it("continues the caller's traceparent: the run's trace_id and the provider request's trace are the caller's trace", async () => {
    const t = await tenant();
    const traceId = hex(16);
    const callerSpan = hex(8);
    const run = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers: { traceparent: `00-${traceId}-${callerSpan}-01` } });
    expect(run.status).toBe(200);
    expect(run.body.trace_id).toBe(traceId);
    expect((await call(api.url, 'GET', `/api/v2/runs/${run.body.id}`, { key: t.key })).body.trace_id).toBe(traceId);
    const [, sentTrace, sentSpan] = TRACEPARENT.exec(await providerTraceparent(t))!;
    expect(sentTrace).toBe(traceId);
    // The provider's parent is the activity's span, not the caller's.
    expect(sentSpan).not.toBe(callerSpan);
  });

  it.each([
    ['no traceparent', undefined],
    ['an invalid traceparent', `00-${'0'.repeat(32)}-${hex(8)}-01`],
  ])('with %s starts a trace of its own, which the provider request carries', async (_, traceparent) => {
    const t = await tenant();
    const run = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers: traceparent ? { traceparent } : {} });
    expect(run.status).toBe(200);
    expect(run.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(run.body.trace_id).not.toBe('0'.repeat(32));
    expect(TRACEPARENT.exec(await providerTraceparent(t))![1]).toBe(run.body.trace_id);
  });
});

interface ExportedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
}

/** An OTLP/HTTP receiver: what POST /v1/traces brings, as the JSON encoding (http/json) has it. */
async function otlpReceiver(): Promise<{ url: string; posts: number; spans: ExportedSpan[]; server: Server }> {
  const received = { url: '', posts: 0, spans: [] as ExportedSpan[], server: createServer() };
  received.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      received.posts++;
      if (req.url === '/v1/traces') {
        for (const rs of JSON.parse(Buffer.concat(chunks).toString()).resourceSpans ?? []) {
          const service = rs.resource.attributes.find((a: { key: string }) => a.key === 'service.name')?.value.stringValue;
          for (const ss of rs.scopeSpans) for (const s of ss.spans) received.spans.push({ service, name: s.name, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => received.server.listen(0, '127.0.0.1', resolve));
  received.url = `http://127.0.0.1:${(received.server.address() as AddressInfo).port}`;
  return received;
}

describe('exporting spans', () => {
  // The API and a worker as deployed (compiled, processes of their own, with the environment under
  // test), on a Temporal server of their own so no other worker takes their runs.
  const API = path.join(__dirname, '../dist/api/server.js');
  const WORKER = path.join(__dirname, '../dist/test/stack/childWorker.js');
  const children: ChildProcess[] = [];
  let temporal: { address: string; process: ChildProcess };

  beforeAll(async () => {
    for (const file of [API, WORKER]) if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (npm test does)`);
    temporal = await startDevServer();
  });
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    temporal?.process.kill('SIGKILL');
  });

  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

  /** Runs one response through an API and a worker process with `env`, then stops both (SIGTERM, as a deploy does); returns the run. */
  async function runThroughProcesses(env: Record<string, string | undefined>, traceparent: string): Promise<{ status: number; body: any; t: Tenant }> {
    const processEnv = { ...process.env, TEMPORAL_ADDRESS: temporal.address, OTEL_TRACES_EXPORTER: undefined, ...env };
    const worker = fork(WORKER, ['agent-runs'], { env: processEnv, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    children.push(worker);
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
    });
    const port = await freePort();
    const apiProcess = spawn(process.execPath, [API], { env: { ...processEnv, PORT: String(port), SHUTDOWN_DELAY_MS: '0' }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(apiProcess);
    await until(async () => ((await answers(port)) ? true : undefined), 'the API process to listen');
    const t = await tenant();
    const run = await call(`http://127.0.0.1:${port}`, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers: { traceparent } });
    // The answer comes at the run's settlement: the workflow (and its span) ends with its last task, just after.
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter });
    await client.workflow.getHandle(run.body.id).result();
    await client.connection.close();
    apiProcess.kill('SIGTERM');
    worker.kill('SIGTERM');
    expect(await exited(apiProcess)).toBe(0);
    expect(await exited(worker)).toBe(0);
    return { ...run, t };
  }

  it('with OTEL_TRACES_EXPORTER=otlp, the API and the worker export their spans of the run, all in the caller’s trace', async () => {
    const receiver = await otlpReceiver();
    try {
      const traceId = hex(16);
      const callerSpan = hex(8);
      // Batches leave only at shutdown, so this also checks that both processes flush when they stop.
      const run = await runThroughProcesses({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' }, `00-${traceId}-${callerSpan}-01`);
      expect(run.status).toBe(200);
      expect(run.body.trace_id).toBe(traceId);
      const inTrace = (service: string) => receiver.spans.filter((s) => s.service === service && s.traceId === traceId).map((s) => s.name);
      expect(inTrace('agent-execution-api')).toEqual(expect.arrayContaining(['POST /api/v2/responses', 'StartWorkflow:agentRun']));
      expect(inTrace('agent-execution-worker')).toEqual(expect.arrayContaining(['RunWorkflow:agentRun', 'StartActivity:startRun', 'RunActivity:startRun']));
      // One tree: the request's span is the caller's child, and the workflow the child of the request's start of it.
      const named = (name: string) => receiver.spans.find((s) => s.name === name)!;
      expect(named('POST /api/v2/responses').parentSpanId).toBe(callerSpan);
      expect(named('StartWorkflow:agentRun').parentSpanId).toBe(named('POST /api/v2/responses').spanId);
      expect(named('RunWorkflow:agentRun').parentSpanId).toBe(named('StartWorkflow:agentRun').spanId);
    } finally {
      receiver.server.close();
    }
  });

  it('by default, sends nothing, even with an endpoint configured, and still carries the trace to the provider', async () => {
    const receiver = await otlpReceiver();
    try {
      const traceId = hex(16);
      const run = await runThroughProcesses({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10' }, `00-${traceId}-${hex(8)}-01`);
      expect(run.status).toBe(200);
      expect(run.body.trace_id).toBe(traceId);
      expect(TRACEPARENT.exec(await providerTraceparent(run.t))![1]).toBe(traceId);
      expect(receiver.posts).toBe(0);
    } finally {
      receiver.server.close();
    }
  });
});
