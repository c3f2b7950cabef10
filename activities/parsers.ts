import { convert } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText as extractPdfText } from 'unpdf';

/**
 * The parsers of formats read whole, run in a process of their own (parseProcess.ts) under OS limits:
 * a small compressed file (a DOCX is a zip, PDF streams are deflated) can inflate far beyond its
 * size, and must not take the worker's memory, or the runs it holds, with it.
 */
export type WholeFormat = 'html' | 'pdf' | 'docx';

/** Text a parsed document may have, at most: a few thousand pages. */
export const MAX_PARSED_CHARS = 8_000_000;

/** A document that cannot be read as its type says; `detail` is safe to show its owner. */
export class Unreadable extends Error {}

function htmlText(file: Buffer): string[] {
  return [
    convert(file.toString('utf8'), {
      wordwrap: false,
      selectors: [
        { selector: 'a', options: { ignoreHref: true } },
        { selector: 'img', format: 'skip' },
        // Headings keep their case (the default shouts them).
        ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
      ],
    }),
  ];
}

async function pdfPages(file: Buffer): Promise<string[]> {
  try {
    // pdf.js takes a Uint8Array that is not a Buffer.
    return (await extractPdfText(new Uint8Array(file.buffer, file.byteOffset, file.byteLength), { mergePages: false })).text;
  } catch (err) {
    throw new Unreadable(err instanceof Error ? err.message : 'not a PDF file.');
  }
}

async function docxText(file: Buffer): Promise<string[]> {
  try {
    return [(await mammoth.extractRawText({ buffer: file })).value];
  } catch (err) {
    throw new Unreadable(err instanceof Error ? err.message : 'not a DOCX file.');
  }
}

/** The document's text, page by page (one page for HTML and DOCX). */
export async function parseWhole(format: WholeFormat, file: Buffer): Promise<string[]> {
  const pages = format === 'html' ? htmlText(file) : format === 'pdf' ? await pdfPages(file) : await docxText(file);
  if (pages.reduce((n, page) => n + page.length, 0) > MAX_PARSED_CHARS) throw new Unreadable(`its text is longer than ${MAX_PARSED_CHARS} characters.`);
  return pages;
}
