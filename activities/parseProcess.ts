import os from 'node:os';
import { parseWhole, Unreadable, type WholeFormat } from './parsers';

/**
 * The entry of a parse process (extract.ts starts one per document read whole, under OS limits on
 * its memory and CPU): the file on stdin, `{pages}` or `{unreadable}` as JSON on stdout. Every failure
 * of a parser on a file is the file's: a well-formed answer says why, and a process that dies (out of
 * memory or CPU) says it by dying.
 */
async function main(format: WholeFormat): Promise<void> {
  // A parse yields the CPU to the worker it serves, and to the runs that worker holds.
  os.setPriority(10);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  try {
    process.stdout.write(JSON.stringify({ pages: await parseWhole(format, Buffer.concat(chunks)) }));
  } catch (err) {
    process.stdout.write(JSON.stringify({ unreadable: err instanceof Unreadable ? err.message : `its parser failed on it (${err instanceof Error ? err.name : 'error'}).` }));
  }
}

void main(process.argv[2] as WholeFormat);
