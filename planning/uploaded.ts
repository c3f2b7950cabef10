import { ServiceError } from '../domain/errors';
import type { StoredDocument } from '../db/documents';

/** An uploaded document, or the 409 that says it has no bytes yet. */
export function requireUploaded(document: StoredDocument): StoredDocument & { storage: 'postgres' | 's3'; storage_key: string } {
  if (document.status !== 'uploaded' || !document.storage || !document.storage_key) {
    throw new ServiceError('document_not_uploaded', 'The document has no content yet: upload it with its upload_url first.');
  }
  return document as StoredDocument & { storage: 'postgres' | 's3'; storage_key: string };
}
