import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { createAgent } from '../admin/commands';
import { resetConfig } from '../infra/config';
import { PROJECT_ROOT } from '../infra/projectRoot';
import { closeDb } from '../db/sequelize';
import { StubProvider, type StubFault } from '../test/stack/stubProvider';
import { percentiles, type Percentiles } from './load';
import type { Stack } from './stack';

/** One phase: runs arriving at `rate` a second for `seconds`, with `fault` on the first provider from `faultFromS` to `faultToS`. */
interface PhaseSettings {
  rate: number;
  seconds: number;
  fault?: { what: string; fault: StubFault; fromS: number; toS: number };
}

export interface PhaseFigures {
  settings: { rate: number; seconds: number; fault?: string; fault_s?: [number, number] };
  sent: number;
  completed: number;
  /** Anything but 200 completed, by answer. Want none. */
  failed: Record<string, number>;
  /** Runs completed a second, from the first sent to the last answered: below `rate` when the fault held runs back past the phase. */
  runs_per_s: number;
  /** Answer time less the fault-free phase's median, of every run, and of the runs in flight at some point of the fault. */
  added_ms: Percentiles;
  added_ms_during_fault: Percentiles;
  /** Calls the first provider was asked, and refused (the fault), per run sent; and calls the second answered. */
  first_asked_per_run: number;
  first_refused_per_run: number;
  fallback_calls: number;
}

export interface ProviderFigures {
  baseline_p50_ms: number;
  plain: PhaseFigures;
  storm: PhaseFigures;
  failover: PhaseFigures;
}

const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));

/**
 * `npm run bench -- --providers`: what a model provider under pressure costs the runs
 * (docs/operations.md, "Model providers"). Two stub providers (test/stack/stubProvider.ts, with its
 * fault switch) declared in MODEL_PROVIDERS for a worker that replaces the service's, and plain runs
 * arriving at a steady rate through the API: first with no fault (the baseline), then through a 429
 * storm with `Retry-After: 2` on an agent with no fallback (its runs wait it out), then through an
 * outage (503, no Retry-After) on an agent with a fallback model on the second provider.
 */
export async function providerFigures(s: Stack, quick: boolean, log: (line: string) => void): Promise<ProviderFigures> {
  const [first, second] = [new StubProvider(), new StubProvider()];
  const urls = [await first.start(), await second.start()];
  const tag = randomBytes(3).toString('hex');
  // Names of this bench run's own: a cooldown in Redis from an earlier run is not this one's.
  const [A, B] = [`bench-a-${tag}`, `bench-b-${tag}`];
  const providers = JSON.stringify([{ name: A, base_url: `${urls[0]}/v1`, api_key: 'bench' }, { name: B, base_url: `${urls[1]}/v1`, api_key: 'bench' }]);
  process.env.MODEL_PROVIDERS = providers;
  resetConfig();
  const alone = await createAgent({ workspace: s.workspace, name: 'bench-provider-alone', config: { model: `${A}/bench`, instructions: 'Answer briefly.' } });
  const withFallback = await createAgent({ workspace: s.workspace, name: 'bench-provider-fallback', config: { model: `${A}/bench`, fallback_models: [`${B}/bench`], instructions: 'Answer briefly.' } });
  await closeDb();
  await s.replaceWorkers(1, undefined, { MODEL_PROVIDERS: providers });
  const seconds = quick ? 12 : 30;
  const faultS: [number, number] = quick ? [3, 9] : [5, 20];
  const rate = 10;
  try {
    // The new worker's first runs are slower (its caches, its connections): not the baseline's.
    log(`providers: warm-up, ${rate} plain runs a second for 5 s (not counted)`);
    await phase(s, alone.id, { rate, seconds: 5 }, [first, second], 0);
    log(`providers: ${rate} plain runs a second for ${seconds} s, no fault (the baseline)`);
    const plain = await phase(s, alone.id, { rate, seconds }, [first, second], 0);
    const baseline = plain.added_ms.p50;
    const p = (f: PhaseFigures) => ({ ...f, added_ms: shifted(f.added_ms, baseline), added_ms_during_fault: shifted(f.added_ms_during_fault, baseline) });
    log(`providers: the same, through a ${faultS[1] - faultS[0]} s storm of 429 Retry-After: 2 on the agent's only provider`);
    const storm = await phase(s, alone.id, { rate, seconds, fault: { what: '429 Retry-After: 2', fault: { status: 429, headers: { 'retry-after': '2' } }, fromS: faultS[0], toS: faultS[1] } }, [first, second], baseline);
    log(`providers: the same, through a ${faultS[1] - faultS[0]} s outage (503) of the agent's provider, with a fallback model on another`);
    const failover = await phase(s, withFallback.id, { rate, seconds, fault: { what: '503', fault: { status: 503 }, fromS: faultS[0], toS: faultS[1] } }, [first, second], baseline);
    const figures = { baseline_p50_ms: baseline, plain: p(plain), storm, failover };
    print(figures, quick);
    return figures;
  } finally {
    await first.stop();
    await second.stop();
  }
}

/** Percentiles of answer times made added latency, once the baseline's median is known. */
function shifted(x: Percentiles, by: number): Percentiles {
  const round = (v: number) => Math.round((v - by) * 100) / 100;
  return { n: x.n, p50: round(x.p50), p95: round(x.p95), p99: round(x.p99) };
}

async function phase(s: Stack, agent: string, o: PhaseSettings, [first, second]: StubProvider[], baselineMs: number): Promise<PhaseFigures> {
  const before = { asked: first.asked, faulted: first.faulted, fallback: second.asked };
  const start = performance.now();
  const fault = o.fault && { ...o.fault, from: start + o.fault.fromS * 1000, to: start + o.fault.toS * 1000 };
  const switching = fault && sleepUntil(fault.from).then(() => first.setFault(fault.fault)).then(() => sleepUntil(fault.to)).then(() => first.setFault(undefined));
  const runs: Promise<{ sentAt: number; doneAt: number; answer: string }>[] = [];
  for (let i = 0; i < o.rate * o.seconds; i++) {
    await sleepUntil(start + (i * 1000) / o.rate);
    runs.push(send(s, agent));
  }
  await switching;
  const done = await Promise.all(runs);
  const completed = done.filter((r) => r.answer === '200 completed');
  const failed: Record<string, number> = {};
  for (const r of done.filter((d) => d.answer !== '200 completed')) failed[r.answer] = (failed[r.answer] ?? 0) + 1;
  const added = (r: { sentAt: number; doneAt: number }) => r.doneAt - r.sentAt - baselineMs;
  const lastDone = Math.max(...done.map((r) => r.doneAt));
  return {
    settings: { rate: o.rate, seconds: o.seconds, ...(o.fault && { fault: o.fault.what, fault_s: [o.fault.fromS, o.fault.toS] as [number, number] }) },
    sent: done.length,
    completed: completed.length,
    failed,
    runs_per_s: Math.round((completed.length / ((lastDone - start) / 1000)) * 100) / 100,
    added_ms: percentiles(completed.map(added)),
    added_ms_during_fault: percentiles(fault ? completed.filter((r) => r.sentAt < fault.to && r.doneAt > fault.from).map(added) : []),
    first_asked_per_run: Math.round(((first.asked - before.asked) / done.length) * 1000) / 1000,
    first_refused_per_run: Math.round(((first.faulted - before.faulted) / done.length) * 1000) / 1000,
    fallback_calls: second.asked - before.fallback,
  };
}

async function send(s: Stack, agent: string): Promise<{ sentAt: number; doneAt: number; answer: string }> {
  const sentAt = performance.now();
  try {
    const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent, input: 'hello' }) });
    const body = (await res.json()) as { status?: string; error?: { code?: string } };
    return { sentAt, doneAt: performance.now(), answer: `${res.status} ${body.error?.code ?? body.status}` };
  } catch (err) {
    return { sentAt, doneAt: performance.now(), answer: `no answer (${(err as Error).message})` };
  }
}

/** Prints the figures and writes bench/results/providers.json; nothing is asserted. */
function print(f: ProviderFigures, quick: boolean): void {
  const file = path.join(PROJECT_ROOT, 'bench/results/providers.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), nproc: availableParallelism(), quick, ...f }, null, 2) + '\n');
  const p = (x: Percentiles) => `p50 ${x.p50} ms, p99 ${x.p99} ms (n ${x.n})`;
  const line = (name: string, x: PhaseFigures) =>
    `${name}: sent ${x.sent}, completed ${x.completed}, failed ${JSON.stringify(x.failed)}, ${x.runs_per_s} runs/s; added latency ${p(x.added_ms)}, of runs in the fault ${p(x.added_ms_during_fault)}; first provider asked ${x.first_asked_per_run} and refused ${x.first_refused_per_run} times a run; fallback calls ${x.fallback_calls}`;
  const lines = ['', `Agent Execution Service bench, model providers under pressure${quick ? ' (--quick)' : ''}: nproc ${availableParallelism()}`, '', `baseline answer time p50 ${f.baseline_p50_ms} ms`, line('no fault', f.plain), line('429 storm', f.storm), line('failover', f.failover), `written: ${path.relative(process.cwd(), file)}`, ''];
  process.stdout.write(lines.join('\n'));
}
