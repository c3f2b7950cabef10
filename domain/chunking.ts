/**
 * Splits text into overlapping chunks for the full-text index, as it streams in: a chunk ends at the
 * best boundary between MIN and MAX characters (the last blank line, else sentence end, else line
 * end, else space), and the next one starts OVERLAP characters back, on a word, so a passage cut at a
 * chunk boundary is still found whole in one of them.
 */
export const CHUNK_MAX_CHARS = 1200;
export const CHUNK_OVERLAP_CHARS = 150;
const CHUNK_MIN_CHARS = 600;

// Control characters other than tab and newline (PostgreSQL text cannot hold NUL at all).
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

function normalize(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(CONTROL, ' ');
}

function breakPoint(text: string): number {
  for (const boundary of ['\n\n', '. ', '.\n', '\n', ' ']) {
    const at = text.lastIndexOf(boundary, CHUNK_MAX_CHARS - boundary.length);
    if (at >= CHUNK_MIN_CHARS) return at + boundary.length;
  }
  return CHUNK_MAX_CHARS;
}

function overlapStart(text: string, cut: number): number {
  const from = cut - CHUNK_OVERLAP_CHARS;
  const space = text.indexOf(' ', from);
  return space === -1 || space >= cut ? from : space + 1;
}

export class Chunker {
  private buffer = '';
  /** Where text not yet in any chunk begins in the buffer (before it: the overlap). */
  private fresh = 0;

  /** Adds text; returns the chunks it completed. */
  push(text: string): string[] {
    this.buffer += normalize(text);
    const chunks: string[] = [];
    while (this.buffer.length > CHUNK_MAX_CHARS) {
      const cut = breakPoint(this.buffer);
      const chunk = this.buffer.slice(0, cut).trim();
      if (chunk) chunks.push(chunk);
      const start = overlapStart(this.buffer, cut);
      this.buffer = this.buffer.slice(start);
      this.fresh = cut - start;
    }
    return chunks;
  }

  /** The last chunk, if any text arrived since the previous one. */
  end(): string[] {
    const rest = this.buffer.slice(this.fresh).trim() ? this.buffer.trim() : '';
    this.buffer = '';
    this.fresh = 0;
    return rest ? [rest] : [];
  }
}
