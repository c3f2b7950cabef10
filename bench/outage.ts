import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import type { TcpProxy } from '../test/support/tcpProxy';
import { percentiles, type Percentiles } from './load';
import type { Stack } from './stack';
import { slowTag, tokenTag } from './stubProvider';

export interface OutageSettings {
  /** Runs started a second, throughout. */
  rate: number;
  /** Seconds of load before the cut, of the cut, and after it. */
  beforeS: number;
  cutS: number;
  afterS: number;
  /** How long the provider takes to answer each run. */
  replyMs: number;
}

export interface OutageFigures {
  settings: OutageSettings;
  sent: number;
  /** Answered 200 with the run completed. */
  completed: number;
  /** Refused while the database was away: 503 service_unavailable (with Retry-After: `with_retry_after`); nothing was started, the client retries. */
  refused: number;
  refused_with_retry_after: number;
  /** Runs lost: anything else (a 500, a failed run, a dropped connection). Want 0. */
  lost: number;
  lost_answers: Record<string, number>;
  /** Provider calls beyond one per run. Want 0. */
  duplicate_provider_calls: number;
  /** Added latency (answer time less the provider's) of runs answered before the cut, and of those in flight at the cut. */
  added_ms_before: Percentiles;
  added_ms_in_flight: Percentiles;
  /** From the restore until a request sent after it was answered 200 (the first one), and until one was answered as fast as before the cut (its p99). */
  first_completed_after_restore_ms: number | null;
  normal_again_after_restore_ms: number | null;
}

interface Sent {
  token: string;
  sentAt: number;
  doneAt: number;
  answer: string;
  retryAfter: boolean;
}

/**
 * `npm run bench -- --outage`: runs arriving at a steady rate while the service's PostgreSQL goes
 * away (every connection dropped, new ones refused, through a proxy in front of it) and comes back.
 * Counts what a failover costs: runs lost, provider calls made twice, the latency added to the runs
 * in flight, and how soon the API answers normally again.
 */
export async function outageFigures(s: Stack, database: TcpProxy, o: OutageSettings): Promise<OutageFigures> {
  const runs: Promise<Sent>[] = [];
  const start = performance.now();
  const total = o.rate * (o.beforeS + o.cutS + o.afterS);
  const cutAt = start + o.beforeS * 1000;
  const restoreAt = cutAt + o.cutS * 1000;
  const cut = sleepUntil(cutAt).then(() => database.cut());
  const restore = cut.then(() => sleepUntil(restoreAt)).then(() => database.restore());
  for (let i = 0; i < total; i++) {
    await sleepUntil(start + (i * 1000) / o.rate);
    runs.push(send(s, randomBytes(6).toString('hex'), o.replyMs));
  }
  await restore;
  const sent = await Promise.all(runs);

  const completed = sent.filter((r) => r.answer === '200 completed');
  const refused = sent.filter((r) => r.answer === '503 service_unavailable');
  const lost = sent.filter((r) => r.answer !== '200 completed' && r.answer !== '503 service_unavailable');
  const lostAnswers: Record<string, number> = {};
  for (const r of lost) lostAnswers[r.answer] = (lostAnswers[r.answer] ?? 0) + 1;
  const added = (r: Sent) => r.doneAt - r.sentAt - o.replyMs;
  const before = percentiles(completed.filter((r) => r.doneAt < cutAt).map(added));
  const afterRestore = completed.filter((r) => r.sentAt >= restoreAt).sort((a, b) => a.doneAt - b.doneAt);
  const normal = afterRestore.find((r) => added(r) <= before.p99);
  return {
    settings: o,
    sent: sent.length,
    completed: completed.length,
    refused: refused.length,
    refused_with_retry_after: refused.filter((r) => r.retryAfter).length,
    lost: lost.length,
    lost_answers: lostAnswers,
    duplicate_provider_calls: [...s.stub.callsByToken.values()].reduce((n, calls) => n + Math.max(0, calls - 1), 0),
    added_ms_before: before,
    added_ms_in_flight: percentiles(completed.filter((r) => r.sentAt < cutAt && r.doneAt >= cutAt).map(added)),
    first_completed_after_restore_ms: afterRestore.length ? Math.round(afterRestore[0].doneAt - restoreAt) : null,
    normal_again_after_restore_ms: normal ? Math.round(normal.doneAt - restoreAt) : null,
  };
}

function sleepUntil(at: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
}

async function send(s: Stack, token: string, replyMs: number): Promise<Sent> {
  const sentAt = performance.now();
  try {
    const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input: `${tokenTag(token)} ${slowTag(1, replyMs)}` }) });
    const body = (await res.json()) as { status?: string; error?: { code?: string } };
    return { token, sentAt, doneAt: performance.now(), answer: `${res.status} ${body.error?.code ?? body.status}`, retryAfter: res.headers.has('retry-after') };
  } catch (err) {
    return { token, sentAt, doneAt: performance.now(), answer: `no answer (${(err as Error).message})`, retryAfter: false };
  }
}
