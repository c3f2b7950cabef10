import { randomBytes } from 'node:crypto';
import { closeTemporal } from '../infra/temporalClient';
import { closeDb } from '../db/sequelize';
import { closedLoop, ClosedLoopWindows, loopShape, sequential, type Operation, type Summary } from './load';
import { AUTH_GET_PATH, operations } from './operations';
import { ingestionThroughput, INGESTED_BYTES, retrievalOverhead } from './knowledge';
import { batchThroughput, BATCH_ITEMS } from './jobs';
import { DELIVERED_EVENTS, webhookFigures } from './webhooks';
import { growthCurves, PRIOR_MESSAGES, STREAM_DELTAS, type GrowthFigures } from './growth';
import { statementsPerRun, type StatementFigures } from './statements';
import { Children, LOG_DIR } from './processes';
import { outageFigures } from './outage';
import { tcpProxy } from '../test/support/tcpProxy';
import { report, reportAnswers, reportPeer, reportInflight, reportOutage, reportRealModel, type InflightMeasured, type Loaded, type Measured } from './report';
import { dropDatabase, PROFILE_DIR, startStack, type Stack } from './stack';
import { BenchStub } from './stubProvider';
import { cpuPerRun, heldAtOnce, openLoop, openStreams, plainBatch, scaleOutFigures, timeline } from './inflight';
import { REAL_MODEL_RUNS, realModelFigures } from './realModel';
import { answerFigures } from './answers';
import { burst, floorRun, peerFigures, serviceRun, WIDE_CLIENTS } from './peer';
import { mergedCost, withRunCost } from './runCost';
import { providerFigures } from './providers';

/**
 * `npm run bench [-- --quick] [-- --core] [-- --profile] [-- --inflight [--inflight-rate N] | --real-model | --outage | --providers | --peer | --answers]`: starts its own stack, measures the floor (Temporal's own cost), runs,
 * streams and an authenticated GET against a bare Koa route, how a run's cost grows with its work, the
 * other workloads, runs with one worker process against two, and streamed runs on the embedded real
 * model against the same requests sent to it straight; prints a table and writes
 * bench/results/latest.json. Targets are printed as met or missed, never asserted.
 */

const QUICK = process.argv.includes('--quick');
/** Only the floor, runs, streams, cancels, the GET pair, statements per run and scale-out: what a change to the run's path moves (and what --profile should see). */
const CORE = process.argv.includes('--core');
const PROFILE = process.argv.includes('--profile');
/** Only the in-flight phases: long streamed runs in an open loop, many open streams, a closed batch of long runs. */
const INFLIGHT_ONLY = process.argv.includes('--inflight');
/** Only the real-model phase: the service and the embedded model server, side by side. */
const REAL_MODEL_ONLY = process.argv.includes('--real-model');
/** Only the outage phase: runs through a PostgreSQL cut (bench/outage.ts). */
const OUTAGE_ONLY = process.argv.includes('--outage');
/** Only the model providers phase: runs through a 429 storm and a failover (bench/providers.ts). */
const PROVIDERS_ONLY = process.argv.includes('--providers');
/** Only the peer phase: the service, then LangGraph's dev server, on the same shapes in one sitting (bench/peer.ts). */
const PEER_ONLY = process.argv.includes('--peer');
/** Only the answers phase: the embedded model's answers to everyday prompts and json_object requests under each setting (bench/answers.ts); no stack. */
const ANSWERS_ONLY = process.argv.includes('--answers');
/** `--inflight-rate N`: the open loop's arrivals per second instead of its default, to find what a machine holds. */
const at = process.argv.indexOf('--inflight-rate');
const INFLIGHT_RATE = at === -1 ? undefined : Number(process.argv[at + 1]);
if (INFLIGHT_RATE !== undefined && !(INFLIGHT_RATE > 0)) throw new Error('--inflight-rate takes a number of runs a second');

const SETTINGS = QUICK
  ? {
      c1: { warmup: 10, count: 40 },
      cancel: { warmup: 2, count: 10 },
      c32: { concurrency: 32, warmupMs: 1000, durationMs: 3000 },
      wide: { concurrency: WIDE_CLIENTS, warmupMs: 1000, durationMs: 3000 },
      growthSamples: 3,
      statementRuns: 50,
      get: { concurrency: 32, warmupMs: 500, durationMs: 2500 },
      inflight: { rate: 20, seconds: 15, chunks: 20, waitMs: 500 },
      fastStreams: { rate: 2, seconds: 10, chunks: 500, waitMs: 20 },
      openStreams: { count: 500, chunks: 10, waitMs: 1000 },
      batch: { runs: 300, ms: 5000 },
      inflightScaleOut: { runs: 400, ms: 10_000, slots: 200 },
      realModelRounds: 2,
      outage: { rate: 20, beforeS: 5, cutS: 10, afterS: 10, replyMs: 1000 },
    }
  : {
      c1: { warmup: 30, count: 300 },
      cancel: { warmup: 3, count: 40 },
      c32: { concurrency: 32, warmupMs: 5000, durationMs: 20_000 },
      wide: { concurrency: WIDE_CLIENTS, warmupMs: 5000, durationMs: 20_000 },
      growthSamples: 15,
      statementRuns: 200,
      get: { concurrency: 32, warmupMs: 3000, durationMs: 15_000 },
      // 600 in flight at steady state: 20 arrivals a second, each run 30 s long.
      inflight: { rate: 20, seconds: 60, chunks: 20, waitMs: 1500 },
      // As a real model streams: 50 chunks a second for 30 s, 60 runs in flight.
      fastStreams: { rate: 2, seconds: 30, chunks: 1500, waitMs: 20 },
      openStreams: { count: 2000, chunks: 10, waitMs: 2000 },
      batch: { runs: 300, ms: 5000 },
      inflightScaleOut: { runs: 600, ms: 20_000, slots: 300 },
      realModelRounds: 5,
      // A managed database's failover is 10 to 60 s: 30 s of it, at the rate the in-flight phase holds.
      outage: { rate: 20, beforeS: 10, cutS: 30, afterS: 20, replyMs: 2000 },
    };

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

async function inflight(s: Stack): Promise<InflightMeasured> {
  const { openStreams: streams, batch: b, fastStreams: f } = SETTINGS;
  const o = { ...SETTINGS.inflight, rate: INFLIGHT_RATE ?? SETTINGS.inflight.rate };
  log(`inflight: open loop, ${o.rate} streamed runs a second for ${o.seconds} s, each ${o.chunks} deltas ${o.waitMs} ms apart (${(o.rate * o.chunks * o.waitMs) / 1000} in flight at steady state)`);
  const openLoopFigures = await openLoop(s, o);
  const { first_delta_overhead_ms: fd, call_delay_ms: cd } = openLoopFigures;
  log(`inflight: first-delta overhead p50 ${fd.p50} ms, p99 ${fd.p99} ms (before the provider call: p50 ${cd.p50} ms, p99 ${cd.p99} ms), ${openLoopFigures.failures} failed`);
  log(`inflight: slowest call delay of the runs arriving in each 5 s: ${openLoopFigures.call_delay_max_by_5s.join(', ')} ms`);
  log(`inflight: CPU ms per run: ${cpuPerRun(openLoopFigures)}`);
  for (const { run, call_delay_ms } of openLoopFigures.slowest) log(`  ${run} waited ${call_delay_ms} ms for its call; its history (ms from start): ${await timeline(run).catch((err) => String(err))}`);
  log(`fast streams: open loop, ${f.rate} streamed runs a second for ${f.seconds} s, each ${f.chunks} chunks ${f.waitMs} ms apart, as a real model streams`);
  const fastFigures = await openLoop(s, f);
  log(`fast streams: CPU ms per run: ${cpuPerRun(fastFigures)}`);
  log(`inflight: ${streams.count} streams opened at once, each ${streams.chunks} deltas ${streams.waitMs} ms apart; the API's Redis connections counted while they are open`);
  const streamFigures = await openStreams(s, streams.count, streams);
  log(`inflight: ${b.runs} floor workflows posted at once, then ${b.runs} plain runs of ${b.ms / 1000} s`);
  const batchFigures = await plainBatch(s, b.runs, b.ms);
  if (!INFLIGHT_ONLY) return { openLoop: openLoopFigures, fastStreams: fastFigures, openStreams: streamFigures, batch: batchFigures };
  // Last: it replaces the service worker.
  const { runs, ms, slots } = SETTINGS.inflightScaleOut;
  const held = async (workers: number) => {
    await s.replaceWorkers(workers, slots);
    log(`scale-out: ${runs} plain runs of ${ms / 1000} s at once, on ${workers} worker process(es) of ${slots} slots each`);
    return heldAtOnce(s, runs, ms);
  };
  const one = await held(1);
  return { openLoop: openLoopFigures, fastStreams: fastFigures, openStreams: streamFigures, batch: batchFigures, scaleOut: scaleOutFigures(runs, ms, one, await held(2)) };
}

/** Windows the peer phase's floor and run c32 phases are alternated in (alternatedC32). */
const PEER_C32_ROUNDS = 4;

/**
 * The floor and the run at c32, alternated in PEER_C32_ROUNDS windows (the first of each with the
 * warm-up, the others with a second's): the dev server's CPU per workflow grows with the workflows
 * its store holds (Temporal per run 17.5 → 23.8 ms, the floor's 18.1 → 21.5, after the c1 phases
 * and a floor c32 phase), so whichever ran second was measured on a fuller store.
 */
async function alternatedC32(s: Stack, op: ReturnType<typeof operations>) {
  const { c32 } = SETTINGS;
  const rounds = QUICK ? 1 : PEER_C32_ROUNDS;
  const loops = { floor: new ClosedLoopWindows(), run: new ClosedLoopWindows() };
  const costs: Record<keyof typeof loops, Parameters<typeof mergedCost>[1]> = { floor: [], run: [] };
  for (let round = 0; round < rounds; round++) {
    const window = { concurrency: c32.concurrency, warmupMs: round === 0 ? c32.warmupMs : 1000, durationMs: c32.durationMs / rounds };
    costs.floor.push(await withRunCost(s, () => loops.floor.window(op.floor, window)));
    costs.run.push(await withRunCost(s, () => loops.run.window(op.run, window)));
  }
  return {
    floorC32: { summary: loops.floor.summary(), cost: await mergedCost('floorWorkflow', costs.floor) },
    runC32: { summary: loops.run.summary(), cost: await mergedCost('agentRun', costs.run) },
  };
}

/** The service on the peer's shapes (the floor's too, for the ratios, and what a run costs each part against it), then the peer on them. */
async function peer(s: Stack, children: Children): Promise<Parameters<typeof reportPeer>[0]> {
  const { c1, c32, batch: b } = SETTINGS;
  const op = operations(s);
  log(`peer shapes: floor and run at concurrency 1 (${c1.warmup} warm-up, ${c1.count} measured), then at ${loopShape(c32)}, then ${b.runs} runs of ${b.ms / 1000} s at once (floor, then run)`);
  const floorC1 = await sequential(op.floor, c1);
  const runC1 = await sequential(op.run, c1);
  const { floorC32, runC32 } = await alternatedC32(s, op);
  // The floor's burst first: what Temporal alone takes here to turn the same burst over, the least any service on it can do.
  const floorBurst = await burst(floorRun(s, b.ms), b.runs, b.ms);
  const burstFigures = await burst(serviceRun(s), b.runs, b.ms);
  // After the bursts, which it would otherwise meet on a fuller store (docs/performance.md).
  log(`peer shapes: run at concurrency ${loopShape(SETTINGS.wide)}`);
  const runWide = await closedLoop(op.run, SETTINGS.wide);
  const ours = {
    floor: { c1: floorC1, c32: floorC32.summary },
    floorBurst,
    run: { c1: runC1, c32: runC32.summary },
    wide: runWide,
    burst: burstFigures,
    cost: { floor: floorC32.cost, run: runC32.cost },
    statements: await statements(op.run),
  };
  const peerMeasured = await peerFigures(children, s.stub.url, SETTINGS, log);
  // Last: it replaces the service worker. Two and three worker processes against the one server, on these two cores.
  const workers: Record<number, Summary> = { 1: runC32.summary };
  for (const count of [2, 3]) {
    await s.replaceWorkers(count);
    log(`peer shapes: run at concurrency ${c32.concurrency} with ${count} worker processes`);
    workers[count] = await closedLoop(op.run, c32);
  }
  return { quick: QUICK, ours: { ...ours, workers }, peer: peerMeasured };
}

async function measure(s: Stack, children: Children): Promise<Measured> {
  const op = operations(s);
  const atC1 = (what: string, operation: Operation) => {
    log(`${what} at concurrency 1 (${SETTINGS.c1.warmup} warm-up, ${SETTINGS.c1.count} measured)`);
    return sequential(operation, SETTINGS.c1);
  };
  const atC32 = async (what: string, operation: Operation, settings = SETTINGS.c32): Promise<Loaded> => {
    log(`${what} at concurrency ${loopShape(settings)}`);
    const { result, usage } = await s.sampler.during(() => closedLoop(operation, settings));
    return { summary: result, usage };
  };
  return {
    quick: QUICK,
    core: CORE,
    settings: SETTINGS,
    floor: { c1: await atC1('floor', op.floor), c32: await atC32('floor', op.floor) },
    run: { c1: await atC1('run', op.run), c32: await atC32('run', op.run) },
    v1Chat: { c1: await atC1('v1_chat (POST /v1/chat/completions, the same run)', op.v1Chat), c32: await atC32('v1_chat (POST /v1/chat/completions, the same run)', op.v1Chat) },
    mcp: {
      direct: await atC1('mcp_direct (tools/call of echo with the SDK client)', op.mcpDirect),
      c1: await atC1('mcp_run (a run with one MCP tool call)', op.mcpRun),
      c32: await atC32('mcp_run (a run with one MCP tool call)', op.mcpRun),
    },
    stream: { c1: await atC1('stream', op.stream), c32: await atC32('stream', op.stream) },
    cancel: await cancelAnswers(op.cancel),
    authGet: await atC32(`auth_get (GET ${AUTH_GET_PATH})`, op.authGet, SETTINGS.get),
    bareKoa: await atC32('bare_koa (GET /ping)', op.bareKoa, SETTINGS.get),
    statements: await statements(op.run),
    ...(!CORE && { growth: await growth(s), ...(await knowledge(s)), batch: await batch(s), webhooks: await webhooks(s), inflight: await inflight(s) }),
    // Then: the second worker stays until the real-model phase replaces both.
    scaleOut: await scaleOut(s, atC32, op.run),
    ...(!CORE && { realModel: await realModel(s, children) }),
  };
}

async function realModel(s: Stack, children: Children): Promise<Measured['realModel']> {
  log(`real-model: ${REAL_MODEL_RUNS} streamed runs at once through the service to the embedded model server, then the same requests straight to it (${SETTINGS.realModelRounds} rounds)`);
  return realModelFigures(s, children, SETTINGS.realModelRounds, log);
}

/** Runs at c32 with the one service worker, then again once a second worker process polls too. */
async function scaleOut(s: Stack, atC32: (what: string, operation: Operation) => Promise<Loaded>, run: Operation): Promise<Measured['scaleOut']> {
  const one = await atC32('scale-out: run with one worker process', run);
  await s.addWorker();
  return { one, two: await atC32('scale-out: run with two worker processes', run) };
}

async function cancelAnswers(cancel: Operation): Promise<Summary> {
  log(`cancel: a streamed run cancelled at its first delta, at concurrency 1 (${SETTINGS.cancel.warmup} warm-up, ${SETTINGS.cancel.count} measured)`);
  return sequential(cancel, SETTINGS.cancel);
}

async function statements(run: Operation): Promise<StatementFigures> {
  log(`statements: PostgreSQL and Redis counters around ${SETTINGS.statementRuns} runs at concurrency 1`);
  return statementsPerRun(run, SETTINGS.statementRuns);
}

async function growth(s: Stack): Promise<GrowthFigures> {
  log(`growth: conversation runs with ${PRIOR_MESSAGES.join(', ')} prior messages, streams of ${STREAM_DELTAS.join(', ')} deltas (${SETTINGS.growthSamples} each at concurrency 1)`);
  return growthCurves(s, SETTINGS.growthSamples);
}

async function webhooks(s: Stack): Promise<Measured['webhooks']> {
  const runs = SETTINGS.c1.count / 2;
  log(`partner webhooks: ${runs} runs at concurrency 1, each delivered; then ${DELIVERED_EVENTS} events written by 32 writers, delivered to a local receiver`);
  return webhookFigures(s, runs);
}

async function batch(s: Stack): Promise<Measured['batch']> {
  log(`a ${BATCH_ITEMS}-item runs.batch job, then the same ${BATCH_ITEMS} runs posted at concurrency 32`);
  return batchThroughput(s);
}

async function knowledge(s: Stack): Promise<Pick<Measured, 'ingestion' | 'retrieval'>> {
  log(`ingestion of a ${INGESTED_BYTES / 1048576} MB text document`);
  const ingestion = await ingestionThroughput(s);
  log(`retrieval overhead: plain and knowledge runs alternated at concurrency 1 (${SETTINGS.c1.warmup} warm-up, ${SETTINGS.c1.count} measured each)`);
  return { ingestion, retrieval: await retrievalOverhead(s, SETTINGS.c1) };
}

async function main(): Promise<void> {
  if (ANSWERS_ONLY) return reportAnswers({ quick: QUICK, answers: await answerFigures(QUICK ? 1 : 3, log) });
  const children = new Children();
  const stub = new BenchStub();
  const database = `aes_bench_${randomBytes(4).toString('hex')}`;
  let stack: Stack | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      stack?.sampler.stop();
      await closeTemporal().catch(() => undefined);
      await children.stopAll();
      await stub.stop();
      await closeDb().catch(() => undefined);
      await dropDatabase(database);
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
        log(`starting the stack (database ${database}, logs in ${LOG_DIR})`);
        // The outage phase puts a proxy between the service and its database, which it cuts.
        const databaseProxy = OUTAGE_ONLY ? await tcpProxy({ host: '127.0.0.1', port: 5432 }) : undefined;
        stack = await startStack(children, stub, database, PROFILE, databaseProxy && ((url) => databaseProxy.through(url)));
        if (databaseProxy) {
          const o = SETTINGS.outage;
          log(`outage: ${o.rate} runs a second (each answered by the provider in ${o.replyMs} ms) for ${o.beforeS} s, then PostgreSQL cut for ${o.cutS} s, then ${o.afterS} s more`);
          reportOutage({ quick: QUICK, outage: await outageFigures(stack, databaseProxy, o) });
          await databaseProxy.close();
        } else if (INFLIGHT_ONLY) reportInflight({ quick: QUICK, settings: SETTINGS, inflight: await inflight(stack) });
        else if (REAL_MODEL_ONLY) reportRealModel(await realModel(stack, children));
        else if (PEER_ONLY) reportPeer(await peer(stack, children));
        else if (PROVIDERS_ONLY) await providerFigures(stack, QUICK, log);
        else report(await measure(stack, children));
        if (PROFILE) log(`CPU profiles of the API and the worker are written to ${PROFILE_DIR} as they stop; ${await stack.profileTemporal()}`);
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
