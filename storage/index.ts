import { config } from '../infra/config';
import type { DocumentStore } from './documentStore';
import { postgresStore } from './postgresStore';
import { s3Store } from './s3Store';

export type { DocumentStore, StoredObject } from './documentStore';

/** The store new uploads go to (DOCUMENT_STORAGE). */
export function uploadStore(): DocumentStore {
  return storeNamed(config().documents.storage);
}

/** The store a document's record names: switching DOCUMENT_STORAGE leaves earlier documents readable. */
export function storeNamed(name: 'postgres' | 's3'): DocumentStore {
  return name === 's3' ? s3Store() : postgresStore;
}
