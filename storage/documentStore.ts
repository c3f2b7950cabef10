import type { Readable } from 'node:stream';

/** Where one upload's bytes are: its document, and the key of the upload attempt that wrote them. */
export interface StoredObject {
  documentKey: number;
  workspace: string;
  document: string;
  uploadKey: string;
}

/**
 * Where document bytes live. Writes stream: the body is read once, in parts, and never held whole
 * (an upload can be far larger than the process's heap). Each upload attempt writes under its own
 * key, so attempts never mix and the one that wins is named on the record.
 */
export interface DocumentStore {
  readonly name: 'postgres' | 's3';
  /** Writes exactly `size` bytes from `body`; rejects (leaving nothing) if the body errors. */
  write(object: StoredObject, body: Readable, size: number): Promise<void>;
  read(object: StoredObject): Promise<Readable>;
  /** Removes one upload's bytes. */
  remove(object: StoredObject): Promise<void>;
  /** Removes every other upload's bytes of the document (earlier attempts that died or lost). */
  removeOthers(object: StoredObject): Promise<void>;
  /** Removes every upload's bytes of the document (it is being deleted). */
  removeAll(object: StoredObject): Promise<void>;
}
