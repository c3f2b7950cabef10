import { Readable } from 'node:stream';
import { deleteAllParts, deleteParts, deletePartsExcept, insertPart, readPart } from '../db/documentParts';
import type { DocumentStore, StoredObject } from './documentStore';

/** Bytes per stored part: what one upload holds in memory at a time. */
export const PART_BYTES = 512 * 1024;

/** The embedded default: bytes in PostgreSQL, as numbered parts of each upload. */
export const postgresStore: DocumentStore = {
  name: 'postgres',

  async write(object: StoredObject, body: Readable): Promise<void> {
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let seq = 0;
    const flush = async () => {
      await insertPart(object.documentKey, object.uploadKey, seq++, Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    };
    try {
      for await (const chunk of body) {
        pending.push(chunk as Buffer);
        pendingBytes += (chunk as Buffer).length;
        if (pendingBytes >= PART_BYTES) await flush();
      }
      if (pendingBytes > 0) await flush();
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
