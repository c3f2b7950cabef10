import { performance } from 'node:perf_hooks';
import { Client as PgClient } from 'pg';
import { mintId } from '../domain/ids';
import { percentiles, type Percentiles } from './load';
import { expectOk } from './operations';
import { timedFrames } from './sseFrames';
import type { Stack } from './stack';
import { deltasTag } from './stubProvider';

/** The sizes the curves are drawn at: prior messages in the conversation, and deltas in a streamed answer. */
export const PRIOR_MESSAGES = [1, 100, 1000];
export const STREAM_DELTAS = [10, 1000, 10000];

export interface GrowthPoint extends Percentiles {
  size: number;
}

export interface GrowthFigures {
  /** A message posted to a conversation (memory on) that already holds `size` messages, at concurrency 1. */
  conversation: GrowthPoint[];
  /** A streamed answer of `size` deltas, read by the client to its terminal event, at concurrency 1. */
  stream: GrowthPoint[];
}

const json = async (body: Promise<string>) => JSON.parse(await body) as Record<string, unknown>;

/** Times `samples` operations one by one, after one warm-up; `prepare` runs untimed before each. */
async function curvePoint(size: number, samples: number, prepare: () => Promise<string>, timed: (prepared: string) => Promise<void>): Promise<GrowthPoint> {
  const latencies: number[] = [];
  for (let i = 0; i <= samples; i++) {
    const prepared = await prepare();
    const started = performance.now();
    await timed(prepared);
    if (i > 0) latencies.push(performance.now() - started);
  }
  return { size, ...percentiles(latencies) };
}

/**
 * How a run's cost grows with its work. Each conversation sample gets a fresh conversation filled
 * with `size` messages in one statement (untimed), so every sample sees exactly that history; memory
 * reads the most recent messages only, so the curve should stay flat. A streamed answer's cost should
 * grow no faster than its deltas.
 */
export async function growthCurves(s: Stack, samples: number): Promise<GrowthFigures> {
  const pg = new PgClient({ connectionString: process.env.DATABASE_URL });
  await pg.connect();
  try {
    const post = (path: string, body: unknown) => fetch(`${s.api}${path}`, { method: 'POST', headers: s.auth, body: JSON.stringify(body) });
    const conversationWith = async (size: number) => {
      const { id } = await json(expectOk(await post('/api/v2/conversations', { agent: s.agent }), 'POST /api/v2/conversations', 201));
      const ids = Array.from({ length: size }, () => mintId('message'));
      await pg.query(
        `INSERT INTO messages (public_id, conversation_id, role, content)
         SELECT m.id, c.id, CASE WHEN m.n % 2 = 1 THEN 'user' ELSE 'assistant' END, to_jsonb('Earlier message ' || m.n)
           FROM unnest($2::text[]) WITH ORDINALITY AS m(id, n), conversations c WHERE c.public_id = $1`,
        [id, ids],
      );
      return String(id);
    };
    const conversation: GrowthPoint[] = [];
    for (const size of PRIOR_MESSAGES) {
      conversation.push(
        await curvePoint(size, samples, () => conversationWith(size), async (id) => {
          const run = await json(expectOk(await post(`/api/v2/conversations/${id}/messages`, { input: 'Say hello.' }), 'POST /api/v2/conversations/{id}/messages'));
          if (run.status !== 'completed') throw new Error(`conversation run ended ${String(run.status)}`);
        }),
      );
    }
    const stream: GrowthPoint[] = [];
    for (const size of STREAM_DELTAS) {
      stream.push(
        await curvePoint(size, samples, async () => '', async () => {
          // The stub's deltas, written at once, reach the client joined in 50 ms windows (activities/deltaWindow.ts): all of the text, in fewer deltas.
          const sent = Array.from({ length: size }, (_, i) => `w${i} `).join('');
          let text = '';
          let last: string | undefined;
          for await (const { frame, event } of timedFrames(await post('/api/v2/responses', { agent: s.agent, input: `Say hello. ${deltasTag(size)}`, stream: true }))) {
            last = event ?? last;
            if (event === 'response.output_text.delta') text += (JSON.parse(/^data: (.+)$/m.exec(frame)![1]) as { delta: string }).delta;
          }
          if (last !== 'response.completed' || text !== sent) throw new Error(`a ${size}-delta stream ended ${last} with ${text.length} of its ${sent.length} characters`);
        }),
      );
    }
    return { conversation, stream };
  } finally {
    await pg.end();
  }
}
