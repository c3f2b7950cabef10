import { performance } from 'node:perf_hooks';
import { percentiles, type Percentiles } from './load';
import type { Stack } from './stack';

/** The ingestion phase's document: plain text of this size. */
export const INGESTED_BYTES = 10 * 1024 * 1024;

const VOCABULARY = 'invoice refund warranty shipping carrier parcel customs ledger balance credit account policy holiday leave payroll onboarding laptop badge office meeting quarterly revenue margin forecast budget supplier contract renewal clause appendix schedule'.split(' ');

/** Prose-like text (sentences, paragraphs) from a fixed vocabulary and seed, so every bench indexes the same bytes. */
function corpus(bytes: number): Buffer {
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const words = Array.from({ length: 8 + (next() % 12) }, () => VOCABULARY[next() % VOCABULARY.length]);
    const sentence = `${words.join(' ')}${next() % 6 === 0 ? '.\n\n' : '. '}`;
    parts.push(sentence);
    size += sentence.length;
  }
  return Buffer.from(parts.join('')).subarray(0, bytes);
}

async function json(res: Response, what: string, status = 200): Promise<any> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

export interface IngestionFigures {
  bytes: number;
  chunks: number;
  seconds: number;
  chunks_per_s: number;
  mb_per_s: number;
}

/**
 * Uploads a 10 MB text document and ingests it into the bench agent's collection: the time from the
 * ingestion request to its completion (extraction, chunking, indexing, the atomic switch), polled
 * every 20 ms. The corpus then serves the retrieval phase.
 */
export async function ingestionThroughput(s: Stack): Promise<IngestionFigures> {
  const bytes = corpus(INGESTED_BYTES);
  const created = await json(
    await fetch(`${s.api}/api/v2/documents`, { method: 'POST', headers: s.auth, body: JSON.stringify({ name: 'bench-corpus.txt', mime_type: 'text/plain', size_bytes: bytes.length }) }),
    'POST /api/v2/documents',
    201,
  );
  await json(await fetch(`${s.api}${new URL(created.upload_url).pathname}`, { method: 'PUT', body: bytes }), 'upload');
  const started = performance.now();
  const ingestion = await json(
    await fetch(`${s.api}/api/v2/knowledge/ingestions`, { method: 'POST', headers: s.auth, body: JSON.stringify({ document: created.id, collection: s.collection }) }),
    'POST /api/v2/knowledge/ingestions',
    202,
  );
  for (;;) {
    const now = await json(await fetch(`${s.api}/api/v2/knowledge/ingestions/${ingestion.id}`, { headers: s.auth }), 'GET ingestion');
    if (now.status === 'failed') throw new Error(`ingestion failed: ${JSON.stringify(now.error)}`);
    if (now.status === 'completed') {
      const seconds = (performance.now() - started) / 1000;
      const chunks = now.progress.chunks_indexed as number;
      return { bytes: bytes.length, chunks, seconds: Math.round(seconds * 100) / 100, chunks_per_s: Math.round(chunks / seconds), mb_per_s: Math.round((bytes.length / 1048576 / seconds) * 100) / 100 };
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface RetrievalFigures {
  plain_p50_ms: number;
  knowledge_p50_ms: number;
  overhead_p50_ms: number;
  plain: Percentiles;
  knowledge: Percentiles;
}

/**
 * The p50 a retrieval adds to a run: runs of the plain agent and of the knowledge agent (same
 * instructions, same stub model, its collection holding the 10 MB corpus), alternated one by one so
 * both see the same machine; the overhead is the difference of their p50s.
 */
export async function retrievalOverhead(s: Stack, o: { warmup: number; count: number }): Promise<RetrievalFigures> {
  const run = async (agent: string) => {
    const started = performance.now();
    const body = await json(
      await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent, input: 'What is the refund policy for a parcel held at customs?' }) }),
      'POST /api/v2/responses',
    );
    if (body.status !== 'completed') throw new Error(`run ended ${body.status}`);
    return performance.now() - started;
  };
  const plain: number[] = [];
  const knowledge: number[] = [];
  for (let i = 0; i < o.warmup + o.count; i++) {
    const [a, b] = [await run(s.agent), await run(s.knowledgeAgent)];
    if (i >= o.warmup) plain.push(a), knowledge.push(b);
  }
  const [p, k] = [percentiles(plain), percentiles(knowledge)];
  return { plain_p50_ms: p.p50, knowledge_p50_ms: k.p50, overhead_p50_ms: Math.round((k.p50 - p.p50) * 100) / 100, plain: p, knowledge: k };
}
