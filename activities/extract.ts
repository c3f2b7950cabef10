import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import pLimit from 'p-limit';
import type { Extractor } from '../domain/knowledge';
import { config } from '../infra/config';
import type { WholeFormat } from './parsers';

/**
 * Formats read whole (PDF, DOCX, HTML) are bounded: the file itself, and what its parser may use.
 * Each parse is a process of its own under OS limits (prlimit): its address space (PARSE_MEMORY_MB,
 * which bounds the buffers a zip or a deflated PDF stream inflates into, outside V8's heap), its CPU
 * time (PARSE_CPU_S) and its wall time. A document past them fails its ingestion alone, once, and
 * the worker, with the runs it holds, never carries a parse's memory. At most PARSE_CONCURRENCY parse at
 * once per worker, so a burst of uploads queues instead of multiplying that memory. Plain text and
 * Markdown stream, bounded only by the upload limit.
 */
export const MAX_PARSED_BYTES = 16 * 1024 * 1024;
const PARSE_HEAP_MB = 128;
/** A parse still running after this much wall time is given up (one starved of CPU as much as one using it). */
const PARSE_TIMEOUT_MS = 5 * 60_000;

// The process runs compiled code: beside this file in dist/, or, when the activities run from source
// (the test suite), from dist/ after npm run build.
const PARSE_PROCESS = __filename.endsWith('.ts') ? path.join(__dirname, '../dist/activities/parseProcess.js') : path.join(__dirname, 'parseProcess.js');

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

/**
 * Parses in a process of its own under OS limits; its pages, or the failure that ends the ingestion.
 * Whatever the file does to its parser (an exception, running out of memory or CPU) is the file's
 * and final; only failing to start the process at all is the service's, and retried.
 */
function parseIsolated(format: WholeFormat, file: Buffer, what: string, signal?: AbortSignal): Promise<string[]> {
  return parses()(() => (signal?.aborted ? Promise.reject(givenUp()) : parseProcess(format, file, what, signal)));
}

const givenUp = () => new CancelledFailure('the parse was given up with its activity');

let limit: pLimit.Limit | undefined;
const parses = () => (limit ??= pLimit(config().parse.concurrency));

/** A parse whose activity is given up (cancelled, timed out, its worker stopping) is killed at once, not left to its limits. */
function parseProcess(format: WholeFormat, file: Buffer, what: string, signal?: AbortSignal): Promise<string[]> {
  const { memoryMb, cpuS } = config().parse;
  return new Promise((resolve, reject) => {
    const child = spawn('prlimit', [`--as=${memoryMb * 1024 * 1024}`, `--cpu=${cpuS}`, '--', process.execPath, `--max-old-space-size=${PARSE_HEAP_MB}`, PARSE_PROCESS, format], {
      stdio: ['pipe', 'pipe', 'ignore'],
      // A parser reads hostile files: it gets no secret (signing secret, database URL, payload and model keys), only where to find prlimit and node.
      env: { PATH: process.env.PATH ?? '' },
    });
    const out: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, PARSE_TIMEOUT_MS);
    const abandon = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', abandon, { once: true });
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    // A process that dies before reading all of stdin closes the pipe: its exit says why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(file);
    child.once('error', (err) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
      reject(err);
    });
    child.once('close', (code, killedBy) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
      if (signal?.aborted) return reject(givenUp());
      let answer: { pages?: string[]; unreadable?: string } | undefined;
      try {
        answer = code === 0 ? JSON.parse(Buffer.concat(out).toString('utf8')) : undefined;
      } catch {
        answer = undefined;
      }
      if (answer?.pages) return resolve(answer.pages);
      if (answer?.unreadable) return reject(unreadable(what, answer.unreadable));
      if (timedOut) return reject(unreadable(what, `parsing it took longer than ${PARSE_TIMEOUT_MS / 60_000} minutes.`));
      reject(unreadable(what, `parsing it needs more memory or CPU than a parse is given (${memoryMb} MB, ${cpuS} s of CPU; ${killedBy ?? `exit ${code}`}).`));
    });
  });
}

/** The text of a document's bytes, in reading order, by its format; `signal` gives up a parse under way. */
export async function* extractText(extractor: Extractor, bytes: Readable, signal?: AbortSignal): AsyncGenerator<TextPiece> {
  if (extractor === 'text') return yield* streamText(bytes);
  const what = { html: 'HTML', pdf: 'PDF', docx: 'DOCX' }[extractor];
  const file = await readWhole(bytes, what);
  // Pages are separated like paragraphs, so no chunk boundary falls mid-word between two pages.
  for (const page of await parseIsolated(extractor, file, what, signal)) yield { text: `${page}\n\n`, bytesRead: file.length };
}
