/** Extractions: structured data drawn from a document's text, segment by segment, then merged. */

export type ExtractionStatus = 'queued' | 'running' | 'completed' | 'failed';
export const EXTRACTION_STATUSES: readonly ExtractionStatus[] = ['queued', 'running', 'completed', 'failed'];

/** Characters of text one extraction run reads, at most; a longer document is cut into segments. */
export const SEGMENT_CHARS = 12_000;
/** Segments one extraction may have: longer documents are refused rather than half read. */
export const MAX_SEGMENTS = 16;
/** Segment runs at a time. */
export const PARALLEL_SEGMENTS = 4;

/** The built-in agent's instructions, used when a request names no agent. */
export const EXTRACTION_INSTRUCTIONS =
  'You extract structured data from documents. Read the document text you are given and fill the requested JSON schema with what the text states. Use only what the text says; leave out (or set to null where allowed) anything it does not state.';

/** The text cut into segments of at most SEGMENT_CHARS, at the last paragraph (else line, else space) break. */
export function segments(text: string): string[] {
  const out: string[] = [];
  let rest = text.trim();
  while (rest.length > SEGMENT_CHARS) {
    const window = rest.slice(0, SEGMENT_CHARS);
    const at = Math.max(window.lastIndexOf('\n\n'), window.lastIndexOf('\n'), window.lastIndexOf(' '));
    const cut = at > SEGMENT_CHARS / 2 ? at : SEGMENT_CHARS;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/** What one segment's run is asked: the caller's instructions and the segment are data, never the system prompt. */
export function segmentTask(s: { document: string; name: string; part: number; parts: number; text: string; instructions?: string }): Record<string, unknown> {
  return {
    task: 'Extract the data the response schema asks for from this part of the document.',
    ...(s.instructions && { instructions: s.instructions }),
    document: { id: s.document, name: s.name, part: `${s.part} of ${s.parts}` },
    text: s.text,
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isEmpty = (v: unknown) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);

/**
 * Merges what each segment found into one value: arrays are concatenated (without repeating an equal
 * item), objects merged key by key, and for anything else the first segment that found a value wins.
 */
export function mergeExtracted(values: unknown[]): unknown {
  return values.reduce((merged, value) => mergeTwo(merged, value), undefined);
}

function mergeTwo(a: unknown, b: unknown): unknown {
  if (isEmpty(a)) return b;
  if (isEmpty(b)) return a;
  if (Array.isArray(a) && Array.isArray(b)) {
    const seen = new Set(a.map((x) => JSON.stringify(x)));
    return [...a, ...b.filter((x) => !seen.has(JSON.stringify(x)))];
  }
  if (isObject(a) && isObject(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const [key, value] of Object.entries(b)) out[key] = mergeTwo(a[key], value);
    return out;
  }
  return a;
}

export interface ExtractionFields {
  public_id: string;
  document: string;
  agent: string;
  status: ExtractionStatus;
  schema: Record<string, unknown>;
  instructions: string | null;
  result: unknown;
  error_code: string | null;
  error_message: string | null;
  segments_total: number;
  segments_done: number;
  runs: string[];
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}
