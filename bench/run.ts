import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client as PgClient } from 'pg';
import type { Client } from '@temporalio/client';
import { createAgent, createWorkspace, createWorkspaceKey } from '../api/admin/commands';
import { closeTemporal, temporal } from '../api/temporal';
import { migrate } from '../db/migrate';
import { closeDb } from '../db/sequelize';
import { freePort } from '../test/stack/temporalServer';
import { closedLoop, sequential, type Operation, type Summary } from './load';
import { answers, Children, ROOT, RssSampler, startTemporal, waitFor } from './processes';
import { BenchStub, STREAM_TAIL_MS, tokenTag } from './stubProvider';

/**
 * `npm run bench [-- --quick]`: issue 6's harness. Starts its own stack (in-memory Temporal, a fresh
 * database, a stub provider that answers at once, the API and the worker as child processes),
 * measures the floor, runs, streams and an authenticated GET, prints a table and writes
 * bench/results/latest.json. Targets are printed as met/missed, never asserted.
 */

const QUICK = process.argv.includes('--quick');

const SETTINGS = QUICK
  ? {
      c1: { warmup: 10, count: 40 },
      streamC1: { warmup: 5, count: 30 },
      c32: { concurrency: 32, warmupMs: 1000, durationMs: 3000 },
      get: { concurrency: 32, warmupMs: 500, durationMs: 2500 },
    }
  : {
      c1: { warmup: 30, count: 300 },
      streamC1: { warmup: 20, count: 200 },
      c32: { concurrency: 32, warmupMs: 5000, durationMs: 20_000 },
      get: { concurrency: 32, warmupMs: 3000, durationMs: 15_000 },
    };

const FLOOR_QUEUE = 'bench-floor';
const SERVICE_QUEUE = 'agent-runs';
const AUTH_GET_PATH = '/api/v2/logs?limit=1';
/** Per 60 s window: far above what the load can send, so no request is refused, yet every limiter check still runs. */
const RATE_LIMIT = '1000000000';

const FAIRNESS = [
  'floor: workflow floorWorkflow = one regular activity that does nothing, on its own task queue, on the same',
  '  Temporal server; its worker is a separate node process built as workers/worker.ts builds one (NativeConnection,',
  '  same namespace, webpack bundle, Worker.create with default concurrency and cache); started and awaited with',
  "  api/temporal.ts's Client (workflow.start + handle.result, as the API does) from the bench process.",
  '  Not in the floor: search attributes and memo, a real input, and the service worker polling three queues.',
];

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const round2 = (x: number) => Math.round(x * 100) / 100;

class NotStreaming extends Error {}

interface Stack {
  api: string;
  bareKoa: string;
  auth: Record<string, string>;
  agent: string;
  client: Client;
  stub: BenchStub;
  sampler: RssSampler;
}

/** Whether both the workflow and the activity side of a task queue have a poller. */
async function polled(client: Client, taskQueue: string): Promise<boolean> {
  for (const taskQueueType of [1, 2] as const) {
    const { pollers } = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType });
    if (!pollers?.length) return false;
  }
  return true;
}

async function startStack(children: Children, stub: BenchStub, database: string): Promise<Stack> {
  const temporalAddress = await startTemporal(children);
  const stubUrl = await stub.start();
  const [apiPort, bareKoaPort] = [await freePort(), await freePort()];
  // The bench's own modules (migrate, admin commands, the Temporal client) read these.
  Object.assign(process.env, { DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`, TEMPORAL_ADDRESS: temporalAddress });

  await migrate();
  const workspace = await createWorkspace({ name: 'bench', credits: 1_000_000_000_000 });
  const key = await createWorkspaceKey({ workspace: workspace.id, scopes: 'responses:create,logs:read', name: 'bench' });
  const agent = await createAgent({ workspace: workspace.id, name: 'bench', config: { model: 'bench', instructions: 'Answer briefly.' } });
  await closeDb();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(apiPort),
    MODEL_PROVIDER: 'openai',
    MODEL_BASE_URL: `${stubUrl}/v1`,
    MODEL_API_KEY: 'bench',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_CREDENTIAL: RATE_LIMIT,
    RATE_LIMIT_TENANT: RATE_LIMIT,
    RATE_LIMIT_TENANT_ENDPOINT: RATE_LIMIT,
    RATE_LIMIT_AGENT: RATE_LIMIT,
    RATE_LIMIT_PRINCIPAL: RATE_LIMIT,
    SHUTDOWN_GRACE_MS: '2000',
  };
  const node = (name: string, script: string, args: string[] = [], extra: NodeJS.ProcessEnv = {}) =>
    children.spawn(name, process.execPath, [script, ...args], { ...env, ...extra }, true).pid!;
  const pids = {
    api: node('api', 'dist/api/server.js'),
    worker: node('worker', 'dist/workers/main.js'),
    floor_worker: node('floor-worker', 'dist/bench/floorWorker.js', [FLOOR_QUEUE]),
  };
  node('bare-koa', 'dist/bench/bareKoa.js', [], { PORT: String(bareKoaPort) });

  const api = `http://127.0.0.1:${apiPort}`;
  const client = await temporal();
  await Promise.all([
    waitFor('the API', async () => (await fetch(`${api}/readyz`)).status === 200),
    waitFor('the service worker', () => polled(client, SERVICE_QUEUE)),
    waitFor('the floor worker', () => polled(client, FLOOR_QUEUE)),
    waitFor('the bare Koa app', () => answers(bareKoaPort)),
  ]);
  return {
    api,
    bareKoa: `http://127.0.0.1:${bareKoaPort}`,
    auth: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    agent: agent.id,
    client,
    stub,
    sampler: new RssSampler(pids),
  };
}

async function expectStatus(res: Response, what: string): Promise<string> {
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

function operations(s: Stack) {
  let floorSeq = 0;
  let streamSeq = 0;
  const floor: Operation = async () => {
    const handle = await s.client.workflow.start('floorWorkflow', { taskQueue: FLOOR_QUEUE, workflowId: `floor-${++floorSeq}` });
    await handle.result();
  };
  const run: Operation = async () => {
    const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input: 'Say hello.' }) });
    const status = (JSON.parse(await expectStatus(res, 'POST /api/v2/responses')) as { status?: string }).status;
    if (status !== 'completed') throw new Error(`run ended ${status}`);
  };
  /** One streamed run; returns the first-delta overhead: client's first delta minus the stub's first chunk. */
  const stream: Operation = async () => {
    const token = `s${++streamSeq}`;
    const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input: `Say hello. ${tokenTag(token)}`, stream: true }) });
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      await expectStatus(res, 'streamed POST /api/v2/responses');
      throw new NotStreaming('the endpoint answered without an event stream');
    }
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const events: string[] = [];
    let buffer = '';
    let firstDeltaAt: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      const at = performance.now();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const type = /^event: (.+)$/m.exec(buffer.slice(0, end))?.[1];
        buffer = buffer.slice(end + 2);
        // Frames without an event line are keep-alive comments.
        if (!type) continue;
        events.push(type);
        if (type === 'response.output_text.delta') firstDeltaAt ??= at;
      }
    }
    const sentAt = s.stub.takeFirstChunkAt(token);
    if (events[0] !== 'response.started' || events.at(-1) !== 'response.completed' || firstDeltaAt === undefined || sentAt === undefined) {
      throw new Error(`unexpected stream: ${events.join(', ') || 'no events'}`);
    }
    return firstDeltaAt - sentAt;
  };
  const authGet: Operation = async () => {
    await expectStatus(await fetch(`${s.api}${AUTH_GET_PATH}`, { headers: s.auth }), `GET ${AUTH_GET_PATH}`);
  };
  const bareKoa: Operation = async () => {
    await expectStatus(await fetch(`${s.bareKoa}/ping`), 'bare Koa');
  };
  return { floor, run, stream, authGet, bareKoa };
}

const figures = ({ extra: _extra, ...rest }: Summary) => rest;

async function measure(s: Stack) {
  const op = operations(s);
  const c32Peaks: Record<string, number>[] = [];
  const atC32 = async (what: string, operation: Operation, settings: typeof SETTINGS.c32) => {
    log(`${what} at concurrency ${settings.concurrency} (${settings.warmupMs / 1000} s warm-up, ${settings.durationMs / 1000} s measured)`);
    const { result, peaks } = await s.sampler.during(() => closedLoop(operation, settings));
    c32Peaks.push(peaks);
    return result;
  };
  const atC1 = (what: string, operation: Operation, settings: typeof SETTINGS.c1) => {
    log(`${what} at concurrency 1 (${settings.warmup} warm-up, ${settings.count} measured)`);
    return sequential(operation, settings);
  };

  const floor = { c1: await atC1('floor', op.floor, SETTINGS.c1), c32: await atC32('floor', op.floor, SETTINGS.c32) };
  const run = { c1: await atC1('run', op.run, SETTINGS.c1), c32: await atC32('run', op.run, SETTINGS.c32) };

  const streamAvailable = await op.stream().then(
    () => true,
    (err) => {
      if (err instanceof NotStreaming) return false;
      throw err;
    },
  );
  let stream: { c1: Summary; c32: Summary } | null = null;
  if (streamAvailable) stream = { c1: await atC1('stream', op.stream, SETTINGS.streamC1), c32: await atC32('stream', op.stream, SETTINGS.c32) };
  else log('streaming endpoint not available: POST /api/v2/responses with stream=true answered JSON; stream not measured');

  const authGet = await atC32(`auth_get (GET ${AUTH_GET_PATH})`, op.authGet, SETTINGS.get);
  const bareKoa = await atC32('bare_koa (GET /ping)', op.bareKoa, SETTINGS.get);

  const peak = (name: string) => round2(Math.max(0, ...c32Peaks.map((p) => p[name] ?? 0)));
  return { floor, run, stream, authGet, bareKoa, rss: { api: peak('api'), worker: peak('worker'), floor_worker: peak('floor_worker') } };
}

type Measured = Awaited<ReturnType<typeof measure>>;

const ratio = (a: number | undefined, b: number | undefined) => (a && b ? round2(a / b) : null);

function report(m: Measured) {
  const overhead = m.stream?.c1.extra ?? null;
  const ratios = {
    run_over_floor_p50_c1: ratio(m.run.c1.p50_ms, m.floor.c1.p50_ms),
    run_over_floor_rps_c32: ratio(m.run.c32.rps, m.floor.c32.rps),
    auth_get_over_bare_koa_rps: ratio(m.authGet.rps, m.bareKoa.rps),
  };
  const target = (name: string, value: number | null, sense: '<=' | '>=', limit: number) => ({
    name,
    value,
    target: `${sense} ${limit}`,
    met: value === null ? null : sense === '<=' ? value <= limit : value >= limit,
  });
  const targets = [
    target('run_over_floor_p50_c1', ratios.run_over_floor_p50_c1, '<=', 1.5),
    target('run_over_floor_rps_c32', ratios.run_over_floor_rps_c32, '>=', 0.8),
    target('stream_first_delta_overhead_p50_ms', overhead?.p50 ?? null, '<=', 5),
    target('auth_get_over_bare_koa_rps', ratios.auth_get_over_bare_koa_rps, '>=', 0.5),
    target('api_rss_mb_c32', m.rss.api, '<=', 200),
    target('worker_rss_mb_c32', m.rss.worker, '<=', 400),
  ];

  const json = {
    date: new Date().toISOString(),
    quick: QUICK,
    nproc: availableParallelism(),
    node: process.version,
    settings: SETTINGS,
    floor: { c1: figures(m.floor.c1), c32: figures(m.floor.c32) },
    run: { c1: figures(m.run.c1), c32: figures(m.run.c32) },
    stream: m.stream && {
      first_delta_overhead_ms: overhead,
      c1: { ...figures(m.stream.c1), first_delta_overhead_ms: m.stream.c1.extra ?? null },
      c32: { ...figures(m.stream.c32), first_delta_overhead_ms: m.stream.c32.extra ?? null },
      provider_tail_ms: STREAM_TAIL_MS,
    },
    ...(!m.stream && { stream_note: 'streaming endpoint not available' }),
    auth_get: { endpoint: `GET ${AUTH_GET_PATH}`, ...figures(m.authGet) },
    bare_koa: { endpoint: 'GET /ping', ...figures(m.bareKoa) },
    rss_mb: m.rss,
    ratios,
    targets,
  };
  const file = path.join(ROOT, 'bench/results/latest.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(json, null, 2) + '\n');

  const cell = (v: number | string | null | undefined, w: number) => String(v ?? '-').padStart(w);
  const row = (name: string, conc: number, s: Summary) =>
    `${name.padEnd(24)}${cell(conc, 5)}${cell(s.n, 7)}${cell(s.errors, 7)}${cell(s.p50_ms, 9)}${cell(s.p95_ms, 9)}${cell(s.p99_ms, 9)}${cell(s.rps, 9)}`;
  const lines = [
    '',
    `Agent Execution Service bench${QUICK ? ' (--quick)' : ''}: ${json.date}, nproc ${json.nproc}, node ${json.node}`,
    '',
    `${'phase'.padEnd(24)}${cell('conc', 5)}${cell('n', 7)}${cell('errors', 7)}${cell('p50 ms', 9)}${cell('p95 ms', 9)}${cell('p99 ms', 9)}${cell('rps', 9)}`,
    row('floor', 1, m.floor.c1),
    row('floor', 32, m.floor.c32),
    row('run', 1, m.run.c1),
    row('run', 32, m.run.c32),
    ...(m.stream
      ? [
          row('stream (whole run)', 1, m.stream.c1),
          row('stream (whole run)', 32, m.stream.c32),
          ...(['c1', 'c32'] as const).map((c) => {
            const x = m.stream![c].extra;
            return `${'stream first-delta ovh'.padEnd(24)}${cell(c === 'c1' ? 1 : 32, 5)}${cell(x?.n, 7)}${cell('', 7)}${cell(x?.p50, 9)}${cell(x?.p95, 9)}${cell(x?.p99, 9)}`;
          }),
        ]
      : ['stream                  streaming endpoint not available: not measured']),
    row('auth_get', 32, m.authGet),
    row('bare_koa', 32, m.bareKoa),
    '',
    `peak RSS under c32 load: api ${m.rss.api} MB, worker ${m.rss.worker} MB (floor worker ${m.rss.floor_worker} MB)`,
    '',
    'targets (reported, not asserted):',
    ...targets.map((t) => `  ${t.name.padEnd(36)}${cell(t.value, 9)}  ${t.target.padEnd(8)}${t.met === null ? 'not measured' : t.met ? 'met' : 'MISSED'}`),
    '',
    ...FAIRNESS,
    `stream: the stub writes its first chunk at once and the rest ${STREAM_TAIL_MS} ms later; overhead = client's first`,
    '  response.output_text.delta minus the stub writing its first chunk, both on the bench process clock.',
    `auth_get: GET ${AUTH_GET_PATH} through the API process; bare_koa: one @koa/router route in its own node process.`,
    ...[m.floor.c1, m.floor.c32, m.run.c1, m.run.c32, m.stream?.c1, m.stream?.c32, m.authGet, m.bareKoa]
      .flatMap((s) => (s?.first_error ? [`first error: ${s.first_error}`] : [])),
    `written: ${path.relative(process.cwd(), file)}`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

async function main(): Promise<void> {
  const children = new Children();
  const stub = new BenchStub();
  const database = `aes_bench_${randomBytes(4).toString('hex')}`;
  let sampler: RssSampler | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      sampler?.stop();
      await closeTemporal().catch(() => undefined);
      await children.stopAll();
      await stub.stop();
      await closeDb().catch(() => undefined);
      const admin = new PgClient({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping everything the bench started`);
      cleanup().finally(() => process.exit(130));
    });
  }
  try {
    await Promise.race([
      children.died,
      (async () => {
        log(`starting the stack (database ${database})`);
        const stack = await startStack(children, stub, database);
        sampler = stack.sampler;
        report(await measure(stack));
      })(),
    ]);
  } finally {
    await cleanup();
  }
}

// Exits explicitly: idle keep-alive sockets of fetch would hold the process open for seconds.
main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
