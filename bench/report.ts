import type { AnswerFigures } from './answers';
import type { OutageFigures } from './outage';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../infra/projectRoot';
import type { Summary } from './load';
import { AUTH_GET_PATH } from './operations';
import type { PhaseUsage } from './processes';
import { STREAM_TAIL_MS } from './stubProvider';
import { WIDE_CLIENTS, type BurstFigures, type PeerFigures, type PeerShapes } from './peer';
import type { RunCost } from './runCost';
import type { IngestionFigures, RetrievalFigures } from './knowledge';
import type { BatchFigures } from './jobs';
import type { RealModelFigures } from './realModel';
import type { WebhookFigures } from './webhooks';
import type { GrowthFigures, GrowthPoint } from './growth';
import type { StatementFigures } from './statements';
import { cpuPerRun, type BatchFigures as LongBatchFigures, type OpenLoopFigures, type OpenStreamsFigures, type ScaleOutFigures } from './inflight';

/** Long runs held at once: the open loop of streamed runs, many open streams, a closed batch of plain runs. */
export interface InflightMeasured {
  openLoop: OpenLoopFigures;
  /** Fewer runs, each streaming as a real model does (50 chunks a second): what a reply's chunks cost. */
  fastStreams: OpenLoopFigures;
  openStreams: OpenStreamsFigures;
  batch: LongBatchFigures;
  /** Runs held at once by one worker process of N slots, then by two (only with --inflight: it replaces the service worker). */
  scaleOut?: ScaleOutFigures;
}

/** A phase at concurrency 32: its figures, and what its requests cost each process. */
export interface Loaded {
  summary: Summary;
  usage: PhaseUsage;
}

export interface Measured {
  quick: boolean;
  core: boolean;
  settings: unknown;
  floor: { c1: Summary; c32: Loaded };
  run: { c1: Summary; c32: Loaded };
  /** The same run through POST /v1/chat/completions. */
  v1Chat: { c1: Summary; c32: Loaded };
  /** A run with one remote MCP tool call (two model calls), and the same tools/call straight to the server. */
  mcp: { direct: Summary; c1: Summary; c32: Loaded };
  stream: { c1: Summary; c32: Loaded };
  /** POST /runs/{id}/cancel of a streamed run at its first delta: its answer's time is the extra figure. */
  cancel: Summary;
  authGet: Loaded;
  bareKoa: Loaded;
  /** PostgreSQL and Redis work per run, from their own counters. */
  statements: StatementFigures;
  /** Run throughput at c32 with one service worker process, then with two. */
  scaleOut: { one: Loaded; two: Loaded };
  /** Not measured with --core. */
  growth?: GrowthFigures;
  ingestion?: IngestionFigures;
  retrieval?: RetrievalFigures;
  batch?: BatchFigures;
  webhooks?: WebhookFigures;
  inflight?: InflightMeasured;
  /** Not measured with --core, nor where the model server is not installed. */
  realModel?: RealModelFigures;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const ratio = (a: number, b: number) => (a && b ? round2(a / b) : null);

/** CPU milliseconds per served request, per process group: where a request's cost goes. */
function cpuPerRequest(l: Loaded): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, ms] of Object.entries(l.usage.cpuMs)) if (ms > 0) out[name] = round2(ms / Math.max(1, l.summary.served));
  return out;
}

const figures = ({ extra: _extra, ...rest }: Summary) => rest;
const peaks = (l: Loaded) => Object.fromEntries(Object.entries(l.usage.peakRssMb).filter(([, mb]) => mb > 0).map(([name, mb]) => [name, round2(mb)]));
const loaded = (l: Loaded) => ({ ...figures(l.summary), cpu_ms_per_request: cpuPerRequest(l), peak_rss_mb: peaks(l) });

const curve = (points: GrowthPoint[], unit: string) => `${points.map((p) => `${p.size}: ${p.p50} / ${p.p95}`).join(', ')} ${unit} (n ${points[0]?.n ?? 0} each)`;

const counts = (c: Record<string, number>) => Object.entries(c).map(([name, n]) => `${name} ${n}`).join(', ') || '-';

const mb = (u: PhaseUsage, name: string) => round2(u.peakRssMb[name] ?? 0);

/** The in-flight targets (issue: hold thousands of long, streamed runs at once). */
function inflightTargets(i: InflightMeasured, target: (name: string, value: number | null, sense: '<=' | '>=', limit: number) => unknown) {
  const o = i.openLoop;
  return [
    target('inflight_failures', o.failures + i.fastStreams.failures + i.openStreams.failures + i.batch.failures + (i.scaleOut?.failures ?? 0), '<=', 0),
    target('inflight_first_delta_overhead_p99_ms', o.first_delta_overhead_ms.p99, '<=', 250),
    target('inflight_duration_overhead_p99_ms', o.duration_overhead_ms.p99, '<=', 1000),
    target('inflight_api_rss_mb', mb(o.usage, 'api'), '<=', 200),
    target('inflight_worker_rss_mb', mb(o.usage, 'worker'), '<=', 400),
    target('open_streams_api_redis_connections', i.openStreams.api_redis_connections, '<=', 8),
    target('long_batch_over_one_run', i.batch.over_one_run, '<=', 2),
    target('two_workers_over_one_held', i.scaleOut?.ratio ?? null, '>=', 1.8),
  ];
}

function inflightLines(i: InflightMeasured): string[] {
  const o = i.openLoop;
  const cpu = (u: PhaseUsage) => Object.entries(u.cpuMs).filter(([, ms]) => ms > 0).map(([name, ms]) => `${name} ${Math.round(ms / 1000)} s`).join(', ');
  return [
    `inflight: ${o.runs} streamed runs of ${o.run_ms / 1000} s, ${o.rate_per_s}/s for ${o.seconds} s (open loop): ${o.failures} failed; peak ${o.peak_open_streams} open streams, ${o.peak_provider_calls} provider calls at once`,
    `  first-delta overhead p50 ${o.first_delta_overhead_ms.p50} ms, p99 ${o.first_delta_overhead_ms.p99} ms; duration overhead p50 ${o.duration_overhead_ms.p50} ms, p99 ${o.duration_overhead_ms.p99} ms; of which before the provider was called p50 ${o.call_delay_ms.p50} ms, p99 ${o.call_delay_ms.p99} ms`,
    `  peak RSS api ${mb(o.usage, 'api')} MB, worker ${mb(o.usage, 'worker')} MB; CPU ${cpu(o.usage)}`,
    `  Temporal per run: ${counts(o.temporal_per_run)}`,
    `fast streams: ${i.fastStreams.runs} streamed runs of ${i.fastStreams.run_ms / 1000} s, each ${i.fastStreams.chunks} chunks, ${i.fastStreams.rate_per_s}/s for ${i.fastStreams.seconds} s: ${i.fastStreams.failures} failed; first-delta overhead p50 ${i.fastStreams.first_delta_overhead_ms.p50} ms, p99 ${i.fastStreams.first_delta_overhead_ms.p99} ms`,
    `  CPU ms per run: ${cpuPerRun(i.fastStreams)}`,
    `open streams: ${i.openStreams.streams} at once, ${i.openStreams.failures} failed; the API held ${i.openStreams.api_redis_connections} Redis connections; peak RSS api ${mb(i.openStreams.usage, 'api')} MB, worker ${mb(i.openStreams.usage, 'worker')} MB`,
    `long batch: ${i.batch.runs} plain runs of ${i.batch.run_ms / 1000} s posted at once: all answered in ${i.batch.seconds} s = ${i.batch.over_one_run}x one run (${i.batch.failures} failed); ${i.batch.runs} floor workflows (no-op) at once took ${i.batch.floor_seconds} s`,
    ...(i.scaleOut
      ? [`scale-out: ${i.scaleOut.runs} plain runs of ${i.scaleOut.run_ms / 1000} s at once: one worker process held ${i.scaleOut.one_worker_peak_calls} calls at once, two held ${i.scaleOut.two_workers_peak_calls} (${i.scaleOut.ratio}x; ${i.scaleOut.failures} failed)`]
      : []),
  ];
}

const targetLine = (t: { name: string; value: number | null; target: string; met: boolean | null }) =>
  `  ${t.name.padEnd(36)}${String(t.value ?? '-').padStart(9)}  ${t.target.padEnd(8)}${t.met === null ? 'not measured' : t.met ? 'met' : 'MISSED'}`;

function makeTarget(name: string, value: number | null, sense: '<=' | '>=', limit: number) {
  return { name, value, target: `${sense} ${limit}`, met: value === null ? null : sense === '<=' ? value <= limit : value >= limit };
}

function write(name: string, json: unknown): string {
  const file = path.join(PROJECT_ROOT, 'bench/results', name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(json, null, 2) + '\n');
  return file;
}

/** `npm run bench -- --inflight`: only the in-flight phases; writes bench/results/inflight.json. */
export function reportInflight(m: { quick: boolean; settings: unknown; inflight: InflightMeasured }): void {
  const targets = inflightTargets(m.inflight, makeTarget) as ReturnType<typeof makeTarget>[];
  const date = new Date().toISOString();
  const file = write('inflight.json', { date, quick: m.quick, nproc: availableParallelism(), node: process.version, settings: m.settings, inflight: m.inflight, targets });
  process.stdout.write(
    ['', `Agent Execution Service bench, in-flight phases${m.quick ? ' (--quick)' : ''}: ${date}, nproc ${availableParallelism()}`, '', ...inflightLines(m.inflight), '', 'targets (reported, not asserted):', ...targets.map(targetLine), '', ...INFLIGHT_NOTES, `written: ${path.relative(process.cwd(), file)}`, ''].join('\n'),
  );
}

const INFLIGHT_NOTES = [
  'inflight: the stub streams each reply as `chunks` deltas, each written `wait` ms after the one before; first-delta overhead =',
  "  the client's first response.output_text.delta minus its request's start, less one wait; duration overhead = the stream's",
  "  end minus its request's start, less chunks x wait. Runs waiting for a worker's slot count in both. One API and one worker",
  '  process as their npm scripts run them, with their default settings.',
  'fast streams: the same open loop with fewer runs, each streaming as a real model does (chunks 20 ms apart): what a',
  "  reply's chunks cost; its duration overhead is left out (1,500 timers of the stub's add their own lateness).",
];

const FAIRNESS = [
  'floor: workflow floorWorkflow = one regular activity that does nothing, on its own task queue, on the same Temporal',
  '  server and flags; one process both starts it and runs it, as the API does with RUNS_IN_API: its worker is started by',
  "  the service's own startWorkers() (same runtime and worker settings) with only the floor's code, and each HTTP GET",
  "  starts one with the service's client module (eagerly when RUNS_IN_API is set, as the API) and answers once it has",
  '  completed. Not in the floor: search attributes and memo, a real input, and the service worker polling three queues.',
  `stream: the stub writes its first chunk at once and the rest ${STREAM_TAIL_MS} ms later; overhead = the client's first`,
  '  response.output_text.delta minus the stub writing its first chunk, both on the bench process clock.',
  'cancel answered: POST /runs/{id}/cancel of a streamed run, sent at its first delta (its reply would go on for 20 s),',
  '  to its answer, which waits until the run shows cancelled (the run settled, its stream ended with response.cancelled).',
  `auth_get: GET ${AUTH_GET_PATH} through the API process; bare_koa: one @koa/router route in its own node process.`,
  'cpu ms/request: CPU time each process group used during the c32 phase (warm-up included) over the requests served.',
  "statements: PostgreSQL's pg_stat_database and pg_stat_user_tables (table reads: index and sequential scans, a join's",
  '  inner side once per probe) and Redis',
  '  INFO commandstats, read 11 s after the runs (idle backends publish late), less what an idle window of the same',
  '  stack grew at the same rate (the outbox dispatcher polls when idle).',
  'scale-out: run at c32 with the one service worker, then again after a second worker process (the same npm script) polls',
  '  the same queues; both share the same two cores with everything else.',
  'growth: c1, one warm-up then the samples; a conversation sample gets a fresh conversation filled with its prior messages',
  '  in one statement (untimed), then one message is posted (memory on); a stream sample reads a streamed answer whose',
  '  stub reply writes that many deltas at once (the client reads them joined in 50 ms windows), to its terminal event.',
  'ingestion: one 10 MB plain-text document (generated prose), from POST /knowledge/ingestions to its record reading',
  '  completed (polled every 20 ms): extraction, chunking, indexing and the switch, on the one service worker.',
  'retrieval overhead: p50 of runs of an agent with knowledge (its collection holds that document) minus p50 of runs',
  '  of the same agent without, alternated one by one at concurrency 1; same input, same stub model.',
  'jobs: POST /api/v2/jobs to the job reading completed (polled every 100 ms), 16 items in flight; then 32 clients',
  '  posting the same runs to /api/v2/responses until all are answered.',
  'webhooks: a partner endpoint on a loopback receiver that answers 204 at once; settle-to-first-attempt = arrival at the',
  '  receiver minus the event envelope\'s created_at (written at settlement by the worker, same clock); throughput = the',
  '  first of the events written (32 writers, one transaction each) to the last delivered, through the outbox dispatcher.',
  'All processes, the load generator and the stub provider share this machine; the service runs at its default log level.',
];

function realModelLines(r: RealModelFigures): string[] {
  const fd = r.first_delta_ms;
  return [
    `real model (${r.runs_at_once} streamed runs at once, ${r.rounds} rounds, ${r.failures} failed${r.first_error ? `: ${r.first_error}` : ''}):`,
    `  first delta p50 / p99 ms: service ${fd.service.p50} / ${fd.service.p99}, straight to the model server ${fd.direct.p50} / ${fd.direct.p99}; added ${fd.added_p50} / ${fd.added_p99}`,
    `  batch time: service ${r.total_ms.service} ms, straight ${r.total_ms.direct} ms; ratio ${r.total_ms.ratio}`,
  ];
}

/** `--real-model`: the phase's lines and targets, and bench/results/real-model.json. */
export function reportRealModel(r: RealModelFigures | undefined): void {
  if (!r) return;
  const targets = [makeTarget('real_model_added_first_delta_p99_ms', r.first_delta_ms.added_p99, '<=', 100), makeTarget('real_model_total_time_ratio', r.total_ms.ratio, '<=', 1.1)];
  const file = write('real-model.json', { date: new Date().toISOString(), nproc: availableParallelism(), real_model: r, targets });
  process.stdout.write(`${['', ...realModelLines(r), '', 'targets (reported, not asserted):', ...targets.map(targetLine), `written: ${path.relative(process.cwd(), file)}`].join('\n')}\n`);
}

/** `npm run bench -- --answers`: the embedded model's answers under each setting; writes bench/results/answers.json. */
export function reportAnswers(m: { quick: boolean; answers: AnswerFigures[] }): void {
  const after = m.answers.find((a) => a.setting.startsWith('after'))!;
  const json = m.answers.at(-1)!;
  const targets = [
    makeTarget('answers_run_to_cap', after.ran_to_cap, '<=', 0),
    makeTarget('answers_repeating_a_sentence', after.repeated_a_sentence, '<=', 0),
    makeTarget('json_answers_not_an_object', json.not_an_object!, '<=', 0),
  ];
  const file = write('answers.json', { date: new Date().toISOString(), nproc: availableParallelism(), quick: m.quick, answers: m.answers, targets });
  printPhase(
    `the embedded model's answers${m.quick ? ' (--quick)' : ''}`,
    m.answers.map(
      (a) =>
        `${a.setting}: ${a.answers} answers, ${a.ran_to_cap} ran to the cap, ${a.not_an_object === undefined ? `${a.repeated_a_sentence} repeated a sentence more than twice` : `${a.not_an_object} not one object`}; output tokens p50 ${a.output_tokens.p50}, p99 ${a.output_tokens.p99}, max ${a.output_tokens.max}`,
    ),
    targets,
    file,
  );
}

/** One phase run alone: its heading, its figures, its targets (reported, not asserted) and the file written. */
function printPhase(phase: string, figures: string[], targets: ReturnType<typeof makeTarget>[], file: string): void {
  const lines = ['', `Agent Execution Service bench, ${phase}: nproc ${availableParallelism()}`, '', ...figures, '', 'targets (reported, not asserted):', ...targets.map(targetLine), `written: ${path.relative(process.cwd(), file)}`, ''];
  process.stdout.write(lines.join('\n'));
}

/** The service's own figures on the peer's shapes, measured right before the peer's. */
export interface OursOnPeerShapes {
  floor: PeerShapes<Summary>;
  run: PeerShapes<Summary>;
  /** The run at the peer's wide concurrency (PeerFigures.wide). */
  wide: Summary;
  burst: BurstFigures;
  /** The same burst of floor runs (their activity holds as long): Temporal's own share of it on this machine. */
  floorBurst: BurstFigures;
  /** Per request of the c32 phases. */
  cost: { floor: RunCost; run: RunCost };
  statements: StatementFigures;
  /** Runs at c32 with 1, 2 and 3 service worker processes against the one Temporal server. */
  workers: Record<number, Summary>;
}

/** A run's cost beside the floor's, a line per part. */
function costLines(cost: OursOnPeerShapes['cost'], statements: StatementFigures): string[] {
  const { floor, run } = cost;
  const line = (what: string, f: number | string, r: number | string) => `  ${what.padEnd(40)}${String(f).padStart(10)}${String(r).padStart(10)}`;
  const total = (c: RunCost) => Math.round(Object.entries(c.cpu_ms).reduce((sum, [name, ms]) => sum + (name === 'bench' ? 0 : ms), 0) * 100) / 100;
  const groups = [...new Set([...Object.keys(floor.cpu_ms), ...Object.keys(run.cpu_ms)])].filter((name) => name !== 'bench');
  const summed = (o: Record<string, number>) => Math.round(Object.values(o).reduce((a, b) => a + b, 0) * 100) / 100;
  return [
    'per request at c32                            floor       run',
    line('workflow tasks', floor.workflow_tasks, run.workflow_tasks),
    line('activity tasks', floor.activity_tasks, run.activity_tasks),
    line('history events (one workflow)', floor.history_events, run.history_events),
    line('Temporal persistence writes', floor.persistence_writes, run.persistence_writes),
    line('timer tasks', floor.timers, run.timers),
    line('Temporal Cloud actions', floor.actions, run.actions),
    ...groups.map((name) => line(`CPU ms, ${name}`, floor.cpu_ms[name] ?? 0, run.cpu_ms[name] ?? 0)),
    line('CPU ms, every process but the bench', total(floor), total(run)),
    line('PostgreSQL transactions (c1)', 0, statements.transactions),
    line('PostgreSQL rows written (c1)', 0, summed(statements.rows_written)),
    line('Redis commands (c1)', 0, summed(statements.redis)),
  ];
}

/** `npm run bench -- --peer`: the service beside LangGraph's dev server, on the same shapes in one sitting; writes bench/results/peer.json. */
export function reportPeer(m: { quick: boolean; ours: OursOnPeerShapes; peer: PeerFigures }): void {
  const { ours, peer } = m;
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const targets = [
    makeTarget('c32_runs_per_s_over_peer', ratio(ours.run.c32.rps, peer.c32.rps), '>=', 1),
    makeTarget('c32_runs_per_s_over_floor', ratio(ours.run.c32.rps, ours.floor.c32.rps), '>=', 0.8),
    makeTarget('burst_seconds_over_peer', ratio(ours.burst.seconds, peer.burst.seconds), '<=', 1),
    makeTarget('c1_p50_over_floor', ratio(ours.run.c1.p50_ms, ours.floor.c1.p50_ms), '<=', 1.5),
  ];
  const file = write('peer.json', { date: new Date().toISOString(), nproc: availableParallelism(), quick: m.quick, ours, peer, targets });
  const b = (x: BurstFigures) => `${x.seconds} s (${x.over_one_run}x one run, ${x.failures} failed)`;
  const errors = (x: Summary) => (x.errors ? ` [${x.errors} failed: ${x.first_error}]` : '');
  const row = (...cells: string[]) => cells[0].padEnd(30) + cells[1].padEnd(18) + cells[2].padEnd(34) + cells[3];
  printPhase(`beside ${peer.version} (langgraph dev, ${peer.jobs_per_worker} jobs per worker)${m.quick ? ' (--quick)' : ''}`, [
    row('shape', 'Temporal floor', 'this service', 'langgraph dev'),
    row('one run at a time, p50', `${ours.floor.c1.p50_ms} ms`, `${ours.run.c1.p50_ms} ms (${ratio(ours.run.c1.p50_ms, ours.floor.c1.p50_ms)}x floor)`, `${peer.c1.p50_ms} ms${errors(ours.run.c1)}${errors(peer.c1)}`),
    row('32 clients, runs/s', `${ours.floor.c32.rps}`, `${ours.run.c32.rps} (${ratio(ours.run.c32.rps, ours.floor.c32.rps)}x floor)`, `${peer.c32.rps} (us: ${ratio(ours.run.c32.rps, peer.c32.rps)}x)${errors(ours.run.c32)}${errors(peer.c32)}`),
    row(`${WIDE_CLIENTS} clients, runs/s`, '', `${ours.wide.rps}`, `${peer.wide.rps} (us: ${ratio(ours.wide.rps, peer.wide.rps)}x)${errors(ours.wide)}${errors(peer.wide)}`),
    row(`${ours.burst.runs} runs of ${ours.burst.run_ms / 1000} s at once`, `${ours.floorBurst.seconds} s`, b(ours.burst), b(peer.burst)),
    `runs/s at c32 by service worker processes: ${Object.entries(ours.workers).map(([count, x]) => `${count}: ${x.rps}${x.errors ? ` (${x.errors} failed)` : ''}`).join(', ')}`,
    '',
    ...costLines(ours.cost, ours.statements),
  ], targets, file);
}

/** `npm run bench -- --outage`: what a 30 s PostgreSQL cut costs; writes bench/results/outage.json. */
export function reportOutage(m: { quick: boolean; outage: OutageFigures }): void {
  const o = m.outage;
  const targets = [
    makeTarget('outage_runs_lost', o.lost, '<=', 0),
    makeTarget('outage_duplicate_provider_calls', o.duplicate_provider_calls, '<=', 0),
    makeTarget('outage_refusals_without_retry_after', o.refused - o.refused_with_retry_after, '<=', 0),
  ];
  const file = write('outage.json', { date: new Date().toISOString(), nproc: availableParallelism(), quick: m.quick, outage: o, targets });
  const p = (x: { p50: number; p99: number; n: number }) => `p50 ${x.p50} ms, p99 ${x.p99} ms (n ${x.n})`;
  printPhase(`PostgreSQL outage${m.quick ? ' (--quick)' : ''}`, [
    `runs sent ${o.sent}: completed ${o.completed}, refused 503 during the cut ${o.refused} (${o.refused_with_retry_after} with Retry-After), lost ${o.lost} ${JSON.stringify(o.lost_answers)}`,
    `provider calls made twice: ${o.duplicate_provider_calls}`,
    `added latency before the cut: ${p(o.added_ms_before)}; of the runs in flight at the cut: ${p(o.added_ms_in_flight)}`,
    `after the restore: first run completed in ${o.first_completed_after_restore_ms} ms, first as fast as before the cut in ${o.normal_again_after_restore_ms} ms`,
  ], targets, file);
}

/** Prints the table and writes bench/results/latest.json; targets are reported, never asserted. */
export function report(m: Measured): void {
  const inflight = m.inflight;
  const overhead = m.stream.c1.extra ?? null;
  const ratios = {
    run_over_floor_p50_c1: ratio(m.run.c1.p50_ms, m.floor.c1.p50_ms),
    run_over_floor_rps_c32: ratio(m.run.c32.summary.rps, m.floor.c32.summary.rps),
    auth_get_over_bare_koa_rps: ratio(m.authGet.summary.rps, m.bareKoa.summary.rps),
    v1_chat_over_run_p50_c1: ratio(m.v1Chat.c1.p50_ms, m.run.c1.p50_ms),
    run_over_v1_chat_rps_c32: ratio(m.run.c32.summary.rps, m.v1Chat.c32.summary.rps),
  };
  // What one MCP call adds to a run beyond the call itself: the run with it, less a plain run and the call made straight.
  const mcpCallOverhead = round2(m.mcp.c1.p50_ms - m.run.c1.p50_ms - m.mcp.direct.p50_ms);
  // Memory under the c32 load: the highest peak of any c32 phase.
  const peak = (name: string) => round2(Math.max(0, ...[m.floor.c32, m.run.c32, m.stream.c32, m.authGet, m.bareKoa].map((l) => l.usage.peakRssMb[name] ?? 0)));
  const rss = { api: peak('api'), worker: peak('worker'), floor_worker: peak('floor_worker') };
  const target = makeTarget;
  const targets = [
    target('run_over_floor_p50_c1', ratios.run_over_floor_p50_c1, '<=', 1.5),
    target('run_over_floor_rps_c32', ratios.run_over_floor_rps_c32, '>=', 0.8),
    target('stream_first_delta_overhead_p50_ms', overhead?.p50 ?? null, '<=', 5),
    target('auth_get_over_bare_koa_rps', ratios.auth_get_over_bare_koa_rps, '>=', 0.5),
    // The OpenAI-compatible surface is a translation: within 5 % of the same run through /api/v2.
    target('v1_chat_over_run_p50_c1', ratios.v1_chat_over_run_p50_c1, '<=', 1.05),
    target('run_over_v1_chat_rps_c32', ratios.run_over_v1_chat_rps_c32, '<=', 1.05),
    target('api_rss_mb_c32', rss.api, '<=', 200),
    target('worker_rss_mb_c32', rss.worker, '<=', 400),
    ...(inflight ? (inflightTargets(inflight, makeTarget) as ReturnType<typeof makeTarget>[]) : []),
    ...(m.realModel
      ? [target('real_model_added_first_delta_p99_ms', m.realModel.first_delta_ms.added_p99, '<=', 100), target('real_model_total_time_ratio', m.realModel.total_ms.ratio, '<=', 1.1)]
      : []),
  ];

  const json = {
    date: new Date().toISOString(),
    quick: m.quick,
    core: m.core,
    nproc: availableParallelism(),
    node: process.version,
    settings: m.settings,
    floor: { c1: figures(m.floor.c1), c32: loaded(m.floor.c32) },
    run: { c1: figures(m.run.c1), c32: loaded(m.run.c32) },
    v1_chat: { c1: figures(m.v1Chat.c1), c32: loaded(m.v1Chat.c32) },
    mcp: { direct_c1: figures(m.mcp.direct), run_c1: figures(m.mcp.c1), run_c32: loaded(m.mcp.c32), call_overhead_p50_ms: mcpCallOverhead },
    stream: {
      first_delta_overhead_ms: overhead,
      c1: { ...figures(m.stream.c1), first_delta_overhead_ms: m.stream.c1.extra ?? null },
      c32: { ...loaded(m.stream.c32), first_delta_overhead_ms: m.stream.c32.summary.extra ?? null },
      provider_tail_ms: STREAM_TAIL_MS,
    },
    cancel: { answered_ms: m.cancel.extra ?? null, errors: m.cancel.errors },
    auth_get: { endpoint: `GET ${AUTH_GET_PATH}`, ...loaded(m.authGet) },
    bare_koa: { endpoint: 'GET /ping', ...loaded(m.bareKoa) },
    statements_per_run: m.statements,
    scale_out: { one_worker: loaded(m.scaleOut.one), two_workers: loaded(m.scaleOut.two) },
    growth: m.growth,
    ingestion: m.ingestion,
    retrieval: m.retrieval,
    batch: m.batch,
    webhooks: m.webhooks,
    inflight,
    real_model: m.realModel,
    rss_mb: rss,
    ratios,
    targets,
  };
  const file = write('latest.json', json);

  const cell = (v: number | string | null | undefined, w: number) => String(v ?? '-').padStart(w);
  const row = (name: string, conc: number, s: Summary) =>
    `${name.padEnd(24)}${cell(conc, 5)}${cell(s.n, 7)}${cell(s.errors, 7)}${cell(s.p50_ms, 9)}${cell(s.p95_ms, 9)}${cell(s.p99_ms, 9)}${cell(s.rps, 9)}`;
  const overheadRow = (conc: number, s: Summary) =>
    `${'stream first-delta ovh'.padEnd(24)}${cell(conc, 5)}${cell(s.extra?.n, 7)}${cell('', 7)}${cell(s.extra?.p50, 9)}${cell(s.extra?.p95, 9)}${cell(s.extra?.p99, 9)}`;
  const c32Phases: [string, Loaded][] = [['floor', m.floor.c32], ['run', m.run.c32], ['stream', m.stream.c32], ['auth_get', m.authGet], ['bare_koa', m.bareKoa]];
  const groups = [...new Set(c32Phases.flatMap(([, l]) => Object.keys(cpuPerRequest(l))))];
  const lines = [
    '',
    `Agent Execution Service bench${m.quick ? ' (--quick)' : ''}${m.core ? ' (--core)' : ''}: ${json.date}, nproc ${json.nproc}, node ${json.node}`,
    '',
    `${'phase'.padEnd(24)}${cell('conc', 5)}${cell('n', 7)}${cell('errors', 7)}${cell('p50 ms', 9)}${cell('p95 ms', 9)}${cell('p99 ms', 9)}${cell('rps', 9)}`,
    row('floor', 1, m.floor.c1),
    row('floor', 32, m.floor.c32.summary),
    row('run', 1, m.run.c1),
    row('run', 32, m.run.c32.summary),
    row('v1_chat (same run)', 1, m.v1Chat.c1),
    row('v1_chat (same run)', 32, m.v1Chat.c32.summary),
    row('mcp call, direct', 1, m.mcp.direct),
    row('run with an mcp call', 1, m.mcp.c1),
    row('run with an mcp call', 32, m.mcp.c32.summary),
    `${'mcp call overhead p50'.padEnd(24)}${cell(1, 5)}${cell('', 7)}${cell('', 7)}${cell(mcpCallOverhead, 9)}   (run with the call, less a plain run and the call made straight)`,
    row('stream (whole run)', 1, m.stream.c1),
    row('stream (whole run)', 32, m.stream.c32.summary),
    overheadRow(1, m.stream.c1),
    overheadRow(32, m.stream.c32.summary),
    `${'cancel answered'.padEnd(24)}${cell(1, 5)}${cell(m.cancel.extra?.n, 7)}${cell(m.cancel.errors, 7)}${cell(m.cancel.extra?.p50, 9)}${cell(m.cancel.extra?.p95, 9)}${cell(m.cancel.extra?.p99, 9)}`,
    row('auth_get', 32, m.authGet.summary),
    row('bare_koa', 32, m.bareKoa.summary),
    '',
    `cpu ms/request at c32   ${groups.map((g) => cell(g, 13)).join('')}`,
    ...c32Phases.map(([name, l]) => `${name.padEnd(24)}${groups.map((g) => cell(cpuPerRequest(l)[g], 13)).join('')}`),
    '',
    `peak RSS under c32 load: api ${rss.api} MB, worker ${rss.worker} MB (floor worker ${rss.floor_worker} MB); by phase:`,
    ...c32Phases.map(([name, l]) => `  ${name.padEnd(10)} api ${peaks(l).api ?? '-'} MB, worker ${peaks(l).worker ?? '-'} MB`),
    '',
    `statements per run (${m.statements.runs} runs at c1): PostgreSQL ${m.statements.transactions} transactions; table reads ${counts(m.statements.scans)}`,
    `  rows written ${counts(m.statements.rows_written)}; Redis ${counts(m.statements.redis)}`,
    '',
    `scale-out (run, c32): one worker process ${m.scaleOut.one.summary.rps} rps, two ${m.scaleOut.two.summary.rps} rps; worker cpu ms/run ${cpuPerRequest(m.scaleOut.one).worker ?? '-'} vs ${round2((cpuPerRequest(m.scaleOut.two).worker ?? 0) + (cpuPerRequest(m.scaleOut.two).worker_2 ?? 0))}`,
    '',
    ...(m.realModel ? [...realModelLines(m.realModel), ''] : []),
    ...(m.growth
      ? [
          `growth (c1 p50 / p95 ms): conversation with ${curve(m.growth.conversation, 'prior messages')}`,
          `                         streamed answer of ${curve(m.growth.stream, 'deltas')}`,
          '',
        ]
      : []),
    ...(m.ingestion && m.retrieval && m.batch && m.webhooks
      ? [
          `knowledge: ingestion of ${round2(m.ingestion.bytes / 1048576)} MB of text: ${m.ingestion.chunks} chunks in ${m.ingestion.seconds} s = ${m.ingestion.chunks_per_s} chunks/s (${m.ingestion.mb_per_s} MB/s)`,
          `           retrieval overhead p50: ${m.retrieval.overhead_p50_ms} ms (run p50 ${m.retrieval.plain_p50_ms} ms without knowledge, ${m.retrieval.knowledge_p50_ms} ms with; n ${m.retrieval.plain.n} each)`,
          `jobs:      a ${m.batch.items}-item runs.batch job: ${m.batch.job_seconds} s = ${m.batch.job_items_per_s} items/s; the same runs posted at c32: ${m.batch.posted_seconds} s = ${m.batch.posted_runs_per_s} runs/s`,
          `webhooks:  ${m.webhooks.deliveries} deliveries (32 writers) in ${m.webhooks.seconds} s = ${m.webhooks.deliveries_per_s} deliveries/s; settlement to first attempt p50 ${m.webhooks.settle_to_first_attempt_ms.p50} ms, p95 ${m.webhooks.settle_to_first_attempt_ms.p95} ms (n ${m.webhooks.settle_to_first_attempt_ms.n})`,
          '',
        ]
      : []),
    ...(inflight ? [...inflightLines(inflight), ''] : []),
    'targets (reported, not asserted):',
    ...targets.map(targetLine),
    '',
    ...FAIRNESS,
    ...INFLIGHT_NOTES,
    ...[m.floor.c1, m.floor.c32.summary, m.run.c1, m.run.c32.summary, m.stream.c1, m.stream.c32.summary, m.authGet.summary, m.bareKoa.summary]
      .flatMap((s) => (s.first_error ? [`first error: ${s.first_error}`] : [])),
    `written: ${path.relative(process.cwd(), file)}`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
}
