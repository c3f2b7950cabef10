import type { IncomingMessage } from 'node:http';

/**
 * A request body read whole, up to `maxBytes`: the bytes, or `tooLarge` once it passes the bound (the
 * rest is not read). Each reader (JSON, forms, MCP) answers an oversized body in its own terms.
 */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'tooLarge'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return 'tooLarge';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
