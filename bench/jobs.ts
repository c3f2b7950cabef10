import { performance } from 'node:perf_hooks';
import type { Stack } from './stack';

/** Items of the batch job, and runs posted one by one to compare it with. */
export const BATCH_ITEMS = 500;
const POSTED_CONCURRENCY = 32;

export interface BatchFigures {
  items: number;
  job_seconds: number;
  job_items_per_s: number;
  posted_seconds: number;
  posted_runs_per_s: number;
}

/** The JSON answer of a request that had to answer `status`; anything else stops the bench. */
export async function ok(res: Response, what: string, status = 200): Promise<any> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * A 500-item runs.batch job (POST to its record reading completed, polled every 100 ms) against the
 * same 500 runs posted one by one by 32 concurrent clients; both on the same agent and stub.
 */
export async function batchThroughput(s: Stack): Promise<BatchFigures> {
  const items = Array.from({ length: BATCH_ITEMS }, (_, n) => ({ input: `Say hello. (${n})` }));
  let started = performance.now();
  const job = await ok(await fetch(`${s.api}/api/v2/jobs`, { method: 'POST', headers: s.auth, body: JSON.stringify({ type: 'runs.batch', params: { agent: s.agent }, items }) }), 'POST /api/v2/jobs', 202);
  for (;;) {
    const now = await ok(await fetch(`${s.api}/api/v2/jobs/${job.id}?items_limit=1`, { headers: s.auth }), 'GET job');
    if (now.status === 'failed' || now.status === 'cancelled') throw new Error(`the batch job ended ${now.status}`);
    if (now.status === 'completed') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const jobSeconds = (performance.now() - started) / 1000;

  let next = 0;
  started = performance.now();
  await Promise.all(
    Array.from({ length: POSTED_CONCURRENCY }, async () => {
      while (next < items.length) {
        const item = items[next++];
        const run = await ok(await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, ...item }) }), 'POST /api/v2/responses');
        if (run.status !== 'completed') throw new Error(`run ended ${run.status}`);
      }
    }),
  );
  const postedSeconds = (performance.now() - started) / 1000;
  const round = (x: number) => Math.round(x * 100) / 100;
  return { items: BATCH_ITEMS, job_seconds: round(jobSeconds), job_items_per_s: round(BATCH_ITEMS / jobSeconds), posted_seconds: round(postedSeconds), posted_runs_per_s: round(BATCH_ITEMS / postedSeconds) };
}
