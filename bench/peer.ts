import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../infra/projectRoot';
import { closedLoop, loopShape, sequential, type Operation, type Summary } from './load';
import { waitFor, type Children } from './processes';
import type { Stack } from './stack';
import { slowTag } from './stubProvider';

/**
 * The peer the issue compares us with, measured in the same sitting on the same machine: LangGraph's
 * dev server (`langgraph dev`, PyPI's `langgraph-cli[inmem]`: in memory, nothing durable) serving a
 * one-node graph that asks the same stub provider (bench/peer/graph.py), driven over its HTTP API the
 * way a client waits for a run (`POST /runs/wait`, stateless). Installed on first use into a venv of
 * its own (.tools/langgraph), from bench/peer/requirements.txt.
 */

const PEER_DIR = path.join(PROJECT_ROOT, 'bench/peer');
const VENV = path.join(PROJECT_ROOT, '.tools/langgraph');
const REQUIREMENTS = path.join(PEER_DIR, 'requirements.txt');
/**
 * As many runs at once as a service worker holds (WORKER_MAX_INFLIGHT_RUNS' default): the dev
 * server's default of 10 jobs would queue a burst, which is not the peer at its best.
 */
export const PEER_JOBS = 1000;
/**
 * Clients of the wide shape: the peer answers `/runs/wait` about a second after the run is sent at
 * best (its c1 p50 is 1,001 ms however quick the stub), so at c32 it is capped near 32 runs a second
 * whatever its cores could do. With this many clients that wait no longer binds.
 */
export const WIDE_CLIENTS = 128;

/** Installs the pinned peer unless the venv has these very requirements already. */
function installPeer(log: (line: string) => void): string {
  const wanted = createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex');
  const marker = path.join(VENV, '.requirements.sha256');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== wanted) {
    log(`peer: installing ${path.relative(PROJECT_ROOT, REQUIREMENTS)} into ${path.relative(PROJECT_ROOT, VENV)} (PyPI)`);
    execFileSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
    execFileSync(path.join(VENV, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS], { stdio: 'inherit' });
    writeFileSync(marker, wanted);
  }
  return path.join(VENV, 'bin/langgraph');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

export interface PeerShapes<T> {
  /** One run at a time. */
  c1: T;
  /** 32 clients, each sending its next run when the last is answered. */
  c32: T;
}

export interface BurstFigures {
  runs: number;
  run_ms: number;
  failures: number;
  /** From the first request sent to the last answer. */
  seconds: number;
  /** `seconds` over one run's length: 1 is a burst that all started at once. */
  over_one_run: number;
}

/** `count` runs whose provider call lasts `ms`, sent at once; how long until the last is answered. */
export async function burst(run: (input: string) => Promise<void>, count: number, ms: number): Promise<BurstFigures> {
  let failures = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, () => run(`Go. ${slowTag(1, ms)}`).catch(() => failures++)));
  const seconds = (performance.now() - started) / 1000;
  return { runs: count, run_ms: ms, failures, seconds: Math.round(seconds * 100) / 100, over_one_run: Math.round((seconds * 1000 * 100) / ms) / 100 };
}

/** The floor's run whose one activity holds `ms`, as a burst's run's provider call does (its input is the stub's, not the floor's). */
export function floorRun(s: Stack, ms: number): (input: string) => Promise<void> {
  return async () => {
    const res = await fetch(`${s.floor}?ms=${ms}`);
    if (res.status !== 204) throw new Error(`the floor answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  };
}

/** The service's plain run, as the bench's `run` operation sends it, with its input given. */
export function serviceRun(s: Stack): (input: string) => Promise<void> {
  return async (input) => {
    const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input, timeout_ms: 120_000 }) });
    const body = (await res.json()) as { status?: string };
    if (res.status !== 200 || body.status !== 'completed') throw new Error(`the run answered ${res.status} ${body.status}`);
  };
}

export interface PeerFigures extends PeerShapes<Summary> {
  /** WIDE_CLIENTS clients: what it turns over when its wait for each run's end does not bind (docs/performance.md). */
  wide: Summary;
  burst: BurstFigures;
  version: string;
  jobs_per_worker: number;
}

interface Settings {
  c1: { warmup: number; count: number };
  c32: { concurrency: number; warmupMs: number; durationMs: number };
  wide: { concurrency: number; warmupMs: number; durationMs: number };
  batch: { runs: number; ms: number };
}

/** Starts the peer beside the bench's stub, measures it on the three shapes, and stops it. */
export async function peerFigures(children: Children, stubUrl: string, settings: Settings, log: (line: string) => void): Promise<PeerFigures> {
  const langgraph = installPeer(log);
  // The dev server pickles its in-memory state here when it stops, and reads it back when it starts: each bench starts empty.
  rmSync(path.join(PEER_DIR, '.langgraph_api'), { recursive: true, force: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = children.spawn('langgraph', langgraph, ['dev', '--host', '127.0.0.1', '--port', String(port), '--no-browser', '--no-reload', '--n-jobs-per-worker', String(PEER_JOBS)], {
    ...process.env,
    PEER_MODEL_BASE_URL: `${stubUrl}/v1`,
    LANGSMITH_TRACING: 'false',
    LANGGRAPH_CLI_NO_ANALYTICS: '1',
  }, PEER_DIR);
  try {
    await waitFor('langgraph dev', async () => (await fetch(`${base}/ok`)).ok, 120_000);
    const run = async (input: string) => {
      const res = await fetch(`${base}/runs/wait`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ assistant_id: 'agent', input: { input } }) });
      const body = (await res.json()) as { output?: string };
      if (res.status !== 200 || typeof body.output !== 'string' || body.output === '') throw new Error(`the peer answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    };
    const plain: Operation = () => run('Say hello.');
    log(`peer: run at concurrency 1 (${settings.c1.warmup} warm-up, ${settings.c1.count} measured)`);
    const c1 = await sequential(plain, settings.c1);
    log(`peer: run at concurrency ${loopShape(settings.c32)}`);
    const c32 = await closedLoop(plain, settings.c32);
    log(`peer: run at concurrency ${loopShape(settings.wide)}`);
    const wide = await closedLoop(plain, settings.wide);
    log(`peer: ${settings.batch.runs} runs of ${settings.batch.ms / 1000} s at once`);
    const burstFigures = await burst(run, settings.batch.runs, settings.batch.ms);
    const version = execFileSync(path.join(VENV, 'bin/python'), ['-c', 'import importlib.metadata as m; print(m.version("langgraph-api"))'], { encoding: 'utf8' }).trim();
    return { c1, c32, wide, burst: burstFigures, version: `langgraph-api ${version}`, jobs_per_worker: PEER_JOBS };
  } finally {
    await children.stop(child);
  }
}
