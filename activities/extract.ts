import path from 'node:path';
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { ApplicationFailure } from '@temporalio/activity';
import type { Extractor } from '../domain/knowledge';
import type { WholeFormat } from './parsers';

/**
 * Formats read whole (PDF, DOCX, HTML) are bounded: the file itself, and the heap its parser may use
 * (a thread of its own, so a document that inflates beyond it fails alone instead of taking the
 * worker down on every retry). Plain text and Markdown stream, bounded only by the upload limit.
 */
export const MAX_PARSED_BYTES = 16 * 1024 * 1024;
const PARSE_HEAP_MB = 128;
/** A parse still running after this is given up (a pathological file). */
const PARSE_TIMEOUT_MS = 5 * 60_000;

// The thread runs compiled code: beside this file in dist/, or, when the activities run from source
// (the test suite), from dist/ after npm run build.
const PARSE_THREAD = __filename.endsWith('.ts') ? path.join(__dirname, '../dist/activities/parseThread.js') : path.join(__dirname, 'parseThread.js');

/** Text as it comes out of a document, with how many of its bytes have been read. */
export interface TextPiece {
  text: string;
  bytesRead: number;
}

const unreadable = (what: string, detail: string) =>
  ApplicationFailure.create({ type: 'invalid_request', message: `The document could not be read as ${what}: ${detail}`, nonRetryable: true });

async function* streamText(bytes: Readable): AsyncGenerator<TextPiece> {
  const decoder = new TextDecoder('utf-8');
  let bytesRead = 0;
  for await (const chunk of bytes) {
    bytesRead += (chunk as Buffer).length;
    yield { text: decoder.decode(chunk as Buffer, { stream: true }), bytesRead };
  }
  yield { text: decoder.decode(), bytesRead };
}

async function readWhole(bytes: Readable, what: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of bytes) {
    size += (chunk as Buffer).length;
    if (size > MAX_PARSED_BYTES) throw unreadable(what, `it is larger than ${MAX_PARSED_BYTES} bytes, the most that is parsed for this format.`);
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts, size);
}

/** Parses in a thread with a bounded heap and time; its pages, or the failure that ends the ingestion. */
function parseIsolated(format: WholeFormat, file: Buffer, what: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const thread = new Worker(PARSE_THREAD, { workerData: { format, file }, resourceLimits: { maxOldGenerationSizeMb: PARSE_HEAP_MB } });
    const timer = setTimeout(() => {
      reject(unreadable(what, `parsing it took longer than ${PARSE_TIMEOUT_MS / 60_000} minutes.`));
      void thread.terminate();
    }, PARSE_TIMEOUT_MS);
    thread.once('message', (answer: { pages?: string[]; unreadable?: boolean; message?: string }) => {
      clearTimeout(timer);
      void thread.terminate();
      if (answer.pages) resolve(answer.pages);
      // A parser's own failure (a bug, not the file) is retried like any other.
      else reject(answer.unreadable ? unreadable(what, answer.message ?? '') : new Error(answer.message));
    });
    thread.once('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      reject(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? unreadable(what, `parsing it needs more than ${PARSE_HEAP_MB} MB of memory.`) : err);
    });
  });
}

/** The text of a document's bytes, in reading order, by its format. */
export async function* extractText(extractor: Extractor, bytes: Readable): AsyncGenerator<TextPiece> {
  if (extractor === 'text') return yield* streamText(bytes);
  const what = { html: 'HTML', pdf: 'PDF', docx: 'DOCX' }[extractor];
  const file = await readWhole(bytes, what);
  // Pages are separated like paragraphs, so no chunk boundary falls mid-word between two pages.
  for (const page of await parseIsolated(extractor, file, what)) yield { text: `${page}\n\n`, bytesRead: file.length };
}
