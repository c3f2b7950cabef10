import { parentPort, workerData } from 'node:worker_threads';
import { parseWhole, Unreadable, type WholeFormat } from './parsers';

/** The entry of a parse thread (extract.ts starts one per parsed document): parses, answers, ends. */
const { format, file } = workerData as { format: WholeFormat; file: Uint8Array };
parseWhole(format, Buffer.from(file.buffer, file.byteOffset, file.byteLength)).then(
  (pages) => parentPort!.postMessage({ pages }),
  (err) => parentPort!.postMessage({ unreadable: err instanceof Unreadable, message: err instanceof Error ? err.message : String(err) }),
);
