import type { Readable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/activity';
import { convert } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText as extractPdfText } from 'unpdf';
import type { Extractor } from '../domain/knowledge';

/**
 * Formats read whole (PDF, DOCX, HTML) are bounded: their parsers hold the file, its structure and
 * its text in the worker's heap (192 MB under npm run start:worker), and a worker that runs out
 * would die on every retry. Plain text and Markdown stream, so they are bounded only by the upload limit.
 */
export const MAX_PARSED_BYTES = 16 * 1024 * 1024;

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

async function pdfPages(file: Buffer): Promise<string[]> {
  try {
    const { text } = await extractPdfText(new Uint8Array(file.buffer, file.byteOffset, file.byteLength), { mergePages: false });
    return text;
  } catch (err) {
    throw unreadable('PDF', err instanceof Error ? err.message : 'not a PDF file.');
  }
}

async function docxText(file: Buffer): Promise<string> {
  try {
    return (await mammoth.extractRawText({ buffer: file })).value;
  } catch (err) {
    throw unreadable('DOCX', err instanceof Error ? err.message : 'not a DOCX file.');
  }
}

function htmlText(file: Buffer): string {
  return convert(file.toString('utf8'), {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      // Headings keep their case (the default shouts them).
      ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
    ],
  });
}

/** The text of a document's bytes, in reading order, by its format. */
export async function* extractText(extractor: Extractor, bytes: Readable): AsyncGenerator<TextPiece> {
  if (extractor === 'text') return yield* streamText(bytes);
  const what = { html: 'HTML', pdf: 'PDF', docx: 'DOCX' }[extractor];
  const file = await readWhole(bytes, what);
  if (extractor === 'html') return yield { text: htmlText(file), bytesRead: file.length };
  if (extractor === 'docx') return yield { text: await docxText(file), bytesRead: file.length };
  // Pages are separated like paragraphs, so no chunk boundary falls mid-word between two pages.
  for (const page of await pdfPages(file)) yield { text: `${page}\n\n`, bytesRead: file.length };
}
