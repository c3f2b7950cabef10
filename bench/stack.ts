import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import type { Client } from '@temporalio/client';
import { createAgent, createWorkspace, createWorkspaceKey } from '../admin/commands';
import { temporal } from '../infra/temporalClient';
import { migrate } from '../db/migrate';
import { closeDb } from '../db/sequelize';
import { PROJECT_ROOT } from '../infra/projectRoot';
import { answers, freePort, startDevServer, TEMPORAL_CLI } from '../workers/temporalDevServer';
import { Children, ProcessSampler, waitFor } from './processes';
import { BenchStub } from './stubProvider';
import { EVERYTHING_BIN } from '../test/support/mcpEverything';
import { profileGoProcess } from './temporalProfile';
import { QUEUES } from '../workflowClients/registry';

export const FLOOR_QUEUE = 'bench-floor';
export const PROFILE_DIR = path.join(PROJECT_ROOT, 'bench/results/profiles');
const SERVICE_QUEUE = QUEUES.runs;
const COLLECTION = 'bench';
/** Per 60 s window: far above what the load can send, so no request is refused, yet every limiter check still runs. */
const RATE_LIMIT = '1000000000';

/** Everything the bench started, and what the operations need to reach it. */
export interface Stack {
  api: string;
  bareKoa: string;
  auth: Record<string, string>;
  workspace: string;
  agent: string;
  /** The same agent with knowledge: it retrieves from `collection`. */
  knowledgeAgent: string;
  collection: string;
  /** The same agent with a remote MCP server's `echo` (the reference server, on loopback) as its tool; and that server's URL. */
  mcpAgent: string;
  mcpServer: string;
  /** The floor process: each GET starts one floor workflow and answers once it has completed. */
  floor: string;
  stub: BenchStub;
  sampler: ProcessSampler;
  pids: { api: number; worker: number };
  /** The service worker's Prometheus metrics (Temporal's SDK metrics and the activities'). */
  workerMetrics: string;
  /** The Temporal server's Prometheus metrics (its requests and persistence writes by operation). */
  temporalMetrics: string;
  /** With `profile`: stops sampling the Temporal server and writes where its CPU went; says where, or why there is none. */
  profileTemporal(): Promise<string>;
  /** Starts a second service worker (as `npm run start:worker` runs it), sampled as worker_2; resolves once it polls agent-runs. */
  addWorker(): Promise<void>;
  /**
   * Stops the service worker (and any added one), then starts `count` workers each holding at most
   * `slots` calls (WORKER_MAX_INFLIGHT_RUNS, else its default), with `env` besides the stack's, sampled
   * as worker_slots_1…; resolves once they all poll.
   */
  replaceWorkers(count: number, slots?: number, env?: NodeJS.ProcessEnv): Promise<void>;
}

/** Whether both the workflow and the activity side of a task queue have a poller. */
async function polled(client: Client, taskQueue: string): Promise<boolean> {
  for (const taskQueueType of [1, 2] as const) {
    const { pollers } = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType });
    if (!pollers?.length) return false;
  }
  return true;
}

/** An npm script's command line, e.g. `node --max-old-space-size=160 dist/api/server.js`, as argv. */
function npmScriptArgs(name: string): string[] {
  const scripts = (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const argv = scripts[name].split(/\s+/);
  if (argv[0] !== 'node') throw new Error(`npm script ${name} does not start with node: ${scripts[name]}`);
  return argv;
}

export async function dropDatabase(database: string): Promise<void> {
  const admin = new PgClient({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await admin.end();
}

/**
 * The stack under test, all on this machine: an in-memory Temporal dev server (the project's flags),
 * a fresh database with one workspace, key and agent, the stub provider in this process, and as
 * child processes the API, the service worker, the floor worker and a bare Koa app. The service runs
 * with its production defaults (log level included); only the rate limits are raised out of reach.
 * With `profile` the API and the service worker run with --cpu-prof, writing to
 * bench/results/profiles/<name>/ (the worker writes one profile per thread), and the Temporal server
 * is sampled by `perf` (bench/temporalProfile.ts).
 */
/** `serviceDatabase`: how the API and the worker reach the database, when not straight (the outage phase's proxy). */
export async function startStack(children: Children, stub: BenchStub, database: string, profile: boolean, serviceDatabase?: (url: string) => string): Promise<Stack> {
  const temporalServer = await startDevServer();
  children.adopt('temporal', temporalServer.process);
  const temporalProfile = profile ? profileGoProcess(temporalServer.process.pid!, TEMPORAL_CLI, path.join(PROFILE_DIR, 'temporal')) : 'not profiled';
  const stubUrl = await stub.start();
  const [apiPort, bareKoaPort, floorPort, workerMetricsPort, mcpPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  // The MCP project's reference server, in its Streamable HTTP mode: it reads its port from PORT alone.
  children.spawn('mcp-everything', process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { PORT: String(mcpPort), PATH: process.env.PATH ?? '' });
  const mcpServer = `http://127.0.0.1:${mcpPort}/mcp`;
  // The bench's own modules (migrate, admin commands, the Temporal client) read these. The service
  // runs outside DEVELOPMENT_MODE, as deployed, so it gets secrets of this run's own (unless given).
  Object.assign(process.env, {
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    TEMPORAL_ADDRESS: temporalServer.address,
    SIGNING_SECRET: process.env.SIGNING_SECRET || randomBytes(32).toString('hex'),
    PAYLOAD_ENCRYPTION_KEYS: process.env.PAYLOAD_ENCRYPTION_KEYS || `bench:${randomBytes(32).toString('base64')}`,
    METRICS_TOKEN: process.env.METRICS_TOKEN || randomBytes(16).toString('hex'),
    // The webhook phase's receiver and the MCP server listen on loopback (the agent's config is checked here too).
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
  });

  await migrate();
  const workspace = await createWorkspace({ name: 'bench', credits: 1_000_000_000_000 });
  const key = await createWorkspaceKey({ workspace: workspace.id, scopes: 'responses:create,conversations:create,messages:create,logs:read,documents:create,knowledge:write,knowledge:read,jobs:create,jobs:read,agents:run', name: 'bench' });
  const agent = await createAgent({ workspace: workspace.id, name: 'bench', config: { model: 'bench', instructions: 'Answer briefly.' } });
  const knowledgeAgent = await createAgent({ workspace: workspace.id, name: 'bench-knowledge', config: { model: 'bench', instructions: 'Answer briefly.', knowledge: { collections: [COLLECTION] } } });
  const mcpTool = { type: 'mcp', server_label: 'everything', server_url: mcpServer, allowed_tools: ['echo'] };
  const mcpAgent = await createAgent({ workspace: workspace.id, name: 'bench-mcp', config: { model: 'bench', instructions: 'Answer briefly.', tools: [mcpTool] } });
  await closeDb();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(apiPort),
    MODEL_PROVIDER: 'openai',
    MODEL_BASE_URL: `${stubUrl}/v1`,
    MODEL_API_KEY: 'bench',
    RATE_LIMIT_CREDENTIAL: RATE_LIMIT,
    RATE_LIMIT_TENANT: RATE_LIMIT,
    RATE_LIMIT_TENANT_ENDPOINT: RATE_LIMIT,
    RATE_LIMIT_AGENT: RATE_LIMIT,
    RATE_LIMIT_PRINCIPAL: RATE_LIMIT,
    // Stopped at the end, the API drains at once, so a --cpu-prof profile is written before the bench gives up on it.
    SHUTDOWN_DELAY_MS: '0',
    SHUTDOWN_GRACE_MS: '2000',
    ...(serviceDatabase && { DATABASE_URL: serviceDatabase(process.env.DATABASE_URL!) }),
  };
  const node = (name: string, script: string, args: string[] = [], extra: NodeJS.ProcessEnv = {}) =>
    children.spawn(name, process.execPath, [script, ...args], { ...env, ...extra }).pid!;
  // The API and the worker run exactly as their npm scripts define them (node options included); the
  // floor's worker gets the service worker's node options too.
  const service = (name: string, npmScript: string, script?: string[], extra: NodeJS.ProcessEnv = {}) => {
    const [, ...args] = npmScriptArgs(npmScript);
    const options = args.filter((a) => a.startsWith('--'));
    const profiling = profile ? ['--cpu-prof', '--cpu-prof-dir', path.join(PROFILE_DIR, name)] : [];
    const child = children.spawn(name, process.execPath, [...profiling, ...(script ? [...options, ...script] : args)], { ...env, ...extra });
    if (npmScript === 'start:worker' && !script) workers.push(child);
    return child.pid!;
  };
  // The service's worker processes (the floor's is not one), which replaceWorkers() stops.
  const workers: ChildProcess[] = [];
  // A started worker is sampled under `name` once it polls agent-runs.
  const polling = async (pid: number, name: string) => {
    sampler.watch(name, pid);
    await waitFor(`worker ${name}`, async () => {
      const { pollers = [] } = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: SERVICE_QUEUE }, taskQueueType: 1 });
      return pollers.some((p) => p.identity?.startsWith(`${pid}@`));
    });
  };
  const pids = {
    api: service('api', 'start:api'),
    worker: service('worker', 'start:worker', undefined, { WORKER_METRICS_PORT: String(workerMetricsPort) }),
    floor_worker: service('floor-worker', 'start:worker', ['dist/bench/floorWorker.js', FLOOR_QUEUE], { PORT: String(floorPort) }),
    bare_koa: node('bare-koa', 'dist/bench/bareKoa.js', [], { PORT: String(bareKoaPort) }),
  };

  const api = `http://127.0.0.1:${apiPort}`;
  const sampler = new ProcessSampler({ ...pids, temporal: temporalServer.process.pid!, postgres: { comm: 'postgres' }, redis: { comm: 'redis-server' } });
  const client = await temporal();
  await Promise.all([
    waitFor('the API', async () => (await fetch(`${api}/readyz`)).status === 200),
    waitFor('the service worker', () => polled(client, SERVICE_QUEUE)),
    waitFor('the floor worker', async () => (await polled(client, FLOOR_QUEUE)) && (await answers(floorPort))),
    waitFor('the bare Koa app', () => answers(bareKoaPort)),
    waitFor('the MCP server', () => answers(mcpPort)),
  ]);
  return {
    api,
    bareKoa: `http://127.0.0.1:${bareKoaPort}`,
    auth: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
    workspace: workspace.id,
    agent: agent.id,
    knowledgeAgent: knowledgeAgent.id,
    collection: COLLECTION,
    mcpAgent: mcpAgent.id,
    mcpServer,
    floor: `http://127.0.0.1:${floorPort}/`,
    stub,
    sampler,
    pids: { api: pids.api, worker: pids.worker },
    workerMetrics: `http://127.0.0.1:${workerMetricsPort}/metrics`,
    temporalMetrics: temporalServer.metrics,
    async profileTemporal() {
      return typeof temporalProfile === 'string' ? temporalProfile : `where the Temporal server's CPU went: ${await temporalProfile.stop()}`;
    },
    async addWorker() {
      await polling(service('worker-2', 'start:worker'), 'worker_2');
    },
    async replaceWorkers(count, slots, extra = {}) {
      await Promise.all(workers.splice(0).map((w) => children.stop(w)));
      for (let i = 1; i <= count; i++) await polling(service(`worker-slots-${i}`, 'start:worker', undefined, { ...(slots && { WORKER_MAX_INFLIGHT_RUNS: String(slots) }), ...extra }), `worker_slots_${i}`);
    },
  };
}
