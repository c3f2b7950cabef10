import { createAgent } from '../admin/commands';
import { closeDb } from '../db/sequelize';
import { startModelServer } from '../workers/modelServer';
import { percentiles, type Percentiles } from './load';
import type { Children } from './processes';
import { timedFrames } from './sseFrames';
import type { Stack } from './stack';

/**
 * The real-model phase: `REAL_MODEL_RUNS` streamed runs at once through the service to the embedded
 * model server (llama.cpp serving SmolLM2-135M, as `npm start` runs it), then the same requests at
 * once straight to that server, round after round. Both sides ask for the same messages (the
 * agent's instructions and the input), at temperature 0, with the same token bound, so the model
 * does the same work; what differs is the service's own path. Targets: added first-delta p99 ≤ 100
 * ms, total-time ratio ≤ 1.1.
 */
export const REAL_MODEL_RUNS = 8;
const INSTRUCTIONS = 'You are a helpful assistant. Answer in two sentences.';
const MAX_TOKENS = 64;
/** The longest a run may take (the spec's bound): on a loaded machine 8 runs at once can pass the default 60 s, which measures the deadline, not the path. */
const TIMEOUT_MS = 120_000;
const INPUTS = ['Why is the sky blue?', 'What is a prime number?', 'How do plants grow?', 'What is rain?', 'Why do cats purr?', 'What is a river?', 'How does a clock work?', 'What is bread made of?'];

export interface RealModelFigures {
  runs_at_once: number;
  rounds: number;
  /** From sending the request to the first text delta: through the service, straight to the server, and the difference at each percentile. */
  first_delta_ms: { service: Percentiles; direct: Percentiles; added_p50: number; added_p99: number };
  /** Each round's batch, from its first request to its last stream's end, summed over the rounds. */
  total_ms: { service: number; direct: number; ratio: number };
  failures: number;
  first_error?: string;
}

interface Timed {
  firstDeltaMs: number;
  totalMs: number;
}

/** Reads an event stream to its end: when the first frame `isDelta` says is text came. */
async function timedStream(started: number, res: Response, isDelta: (frame: string) => boolean): Promise<Timed> {
  if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) throw new Error(`answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  let firstDeltaAt: number | undefined;
  let ended = false;
  let failed: string | undefined;
  for await (const { frame, at } of timedFrames(res)) {
    if (isDelta(frame)) firstDeltaAt ??= at;
    if (/^event: response\.completed$/m.test(frame) || frame === 'data: [DONE]') ended = true;
    if (/^event: response\.failed$/m.test(frame)) failed = frame.slice(0, 300);
  }
  if (failed) throw new Error(`the run failed: ${failed}`);
  if (!ended || firstDeltaAt === undefined) throw new Error('the stream ended without text or without its end');
  return { firstDeltaMs: firstDeltaAt - started, totalMs: performance.now() - started };
}

function throughService(s: Stack, agent: string, input: string): Promise<Timed> {
  const started = performance.now();
  return fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent, input, stream: true, timeout_ms: TIMEOUT_MS }) }).then((res) =>
    timedStream(started, res, (frame) => /^event: response\.output_text\.delta$/m.test(frame)),
  );
}

function direct(modelUrl: string, apiKey: string, input: string): Promise<Timed> {
  const started = performance.now();
  const body = {
    model: 'smollm2',
    messages: [
      { role: 'system', content: INSTRUCTIONS },
      { role: 'user', content: input },
    ],
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: MAX_TOKENS,
    temperature: 0,
  };
  return fetch(`${modelUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body: JSON.stringify(body) }).then((res) =>
    timedStream(started, res, (frame) => /"delta":\{[^}]*"content":"[^"]/.test(frame)),
  );
}

/** One batch at once: each request's timings, and the batch's time from start to the last end. */
async function batch(send: (input: string) => Promise<Timed>): Promise<{ timed: Timed[]; totalMs: number; errors: string[] }> {
  const started = performance.now();
  const settled = await Promise.allSettled(INPUTS.slice(0, REAL_MODEL_RUNS).map(send));
  const timed = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const errors = settled.flatMap((r) => (r.status === 'rejected' ? [String(r.reason?.message ?? r.reason)] : []));
  return { timed, totalMs: performance.now() - started, errors };
}

/**
 * Starts the model server, moves the service's workers onto it (the last phase: they stay), and
 * measures; undefined, with the reason logged, when the model server is not installed.
 */
export async function realModelFigures(s: Stack, children: Children, rounds: number, log: (line: string) => void): Promise<RealModelFigures | undefined> {
  let server: Awaited<ReturnType<typeof startModelServer>>;
  try {
    server = await startModelServer(REAL_MODEL_RUNS);
  } catch (err) {
    log(`real-model: skipped, the model server did not start (bash workers/setup.sh --build installs it): ${String(err).slice(0, 300)}`);
    return undefined;
  }
  children.adopt('model-server', server.process);
  await s.replaceWorkers(1, undefined, { MODEL_BASE_URL: `${server.url}/v1`, MODEL_API_KEY: server.apiKey });
  const agent = await createAgent({ workspace: s.workspace, name: 'bench-real-model', config: { model: 'smollm2', instructions: INSTRUCTIONS, max_output_tokens: MAX_TOKENS, temperature: 0 } });
  await closeDb();
  // Warm both paths: the model's first batch and the service's first run on the new worker.
  await batch((input) => direct(server.url, server.apiKey, input));
  await batch((input) => throughService(s, agent.id, input));
  const service: Timed[] = [];
  const straight: Timed[] = [];
  const totals = { service: 0, direct: 0 };
  const errors: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const viaService = await batch((input) => throughService(s, agent.id, input));
    const viaDirect = await batch((input) => direct(server.url, server.apiKey, input));
    service.push(...viaService.timed);
    straight.push(...viaDirect.timed);
    totals.service += viaService.totalMs;
    totals.direct += viaDirect.totalMs;
    errors.push(...viaService.errors, ...viaDirect.errors);
  }
  const [svc, dir] = [percentiles(service.map((t) => t.firstDeltaMs)), percentiles(straight.map((t) => t.firstDeltaMs))];
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return {
    runs_at_once: REAL_MODEL_RUNS,
    rounds,
    first_delta_ms: { service: svc, direct: dir, added_p50: round2(svc.p50 - dir.p50), added_p99: round2(svc.p99 - dir.p99) },
    total_ms: { service: round2(totals.service), direct: round2(totals.direct), ratio: round2(totals.service / totals.direct) },
    failures: errors.length,
    ...(errors.length && { first_error: errors[0] }),
  };
}
