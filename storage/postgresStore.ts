import { Readable } from 'node:stream';
import { deleteAllParts, deleteParts, deletePartsExcept, insertPart, readPart } from '../db/documentParts';
import type { DocumentStore, StoredObject } from './documentStore';

/** Bytes per stored part: what one upload holds in memory at a time. */
export const PART_BYTES = 512 * 1024;

/** The embedded default: bytes in PostgreSQL, as numbered parts of each upload. */
export const postgresStore: DocumentStore = {
  name: 'postgres',

  async write(object: StoredObject, body: Readable): Promise<void> {
    // One part buffer per upload, filled and written in turn: an upload holds PART_BYTES and makes no garbage per part.
    const part = Buffer.allocUnsafe(PART_BYTES);
    let filled = 0;
    let seq = 0;
    try {
      for await (const chunk of body) {
        for (let offset = 0; offset < (chunk as Buffer).length; ) {
          const copied = (chunk as Buffer).copy(part, filled, offset);
          filled += copied;
          offset += copied;
          if (filled === PART_BYTES) {
            await insertPart(object.documentKey, object.uploadKey, seq++, part);
            filled = 0;
          }
        }
      }
      if (filled > 0) await insertPart(object.documentKey, object.uploadKey, seq, part.subarray(0, filled));
    } catch (err) {
      await deleteParts(object.documentKey, object.uploadKey).catch(() => undefined);
      throw err;
    }
  },

  async read(object: StoredObject): Promise<Readable> {
    return Readable.from(
      (async function* parts() {
        for (let seq = 0; ; seq++) {
          const part = await readPart(object.documentKey, object.uploadKey, seq);
          if (!part) return;
          yield part;
        }
      })(),
      { objectMode: false },
    );
  },

  remove: (object) => deleteParts(object.documentKey, object.uploadKey),
  removeOthers: (object) => deletePartsExcept(object.documentKey, object.uploadKey),
  removeAll: (object) => deleteAllParts(object.documentKey),
};
