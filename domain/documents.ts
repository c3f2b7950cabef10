import type { GrantPurpose } from './grants';
import { closed, constant, deletion, integer, matching, oneOfValues, optional, orNull, publicId, text, timestamp, uri, type Static } from './shape';

/** Documents: a record, then its bytes, uploaded once through a grant (docs/api.md, "Documents"). */

export const DOCUMENT_STATUSES = ['pending', 'uploaded'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** `type/subtype` with optional parameters, as a Content-Type header would carry it. */
export const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}(\s*;\s*[a-z0-9!#$&^_.+-]+=("[^"\\\r\n]*"|[a-z0-9!#$&^_.+-]+))*$/i;

export interface DocumentRow {
  public_id: string;
  name: string;
  mime_type: string;
  size_bytes: number;
  status: DocumentStatus;
  sha256: string | null;
  created_at: Date;
  uploaded_at: Date | null;
}

const recordFields = {
  id: publicId('document'),
  object: constant('document'),
  name: text(),
  mime_type: text('As declared at creation; content is always served as an attachment whatever it is.'),
  size_bytes: integer({ minimum: 1 }),
  status: oneOfValues(DOCUMENT_STATUSES, '`pending` until its bytes are uploaded, once.'),
  sha256: orNull(matching('^[0-9a-f]{64}$', 'Of the uploaded bytes.')),
  created_at: timestamp(),
  uploaded_at: orNull(timestamp()),
};

/** The public document record: its shape, declared once for the view and the OpenAPI document. */
export const Document = closed(recordFields);

export function documentObject(row: DocumentRow): Static<typeof Document> {
  return {
    id: row.public_id,
    object: 'document',
    name: row.name,
    mime_type: row.mime_type,
    size_bytes: row.size_bytes,
    status: row.status,
    sha256: row.sha256,
    created_at: row.created_at.toISOString(),
    uploaded_at: row.uploaded_at?.toISOString() ?? null,
  };
}

/** A signed, expiring URL (api/transfers/documents.ts transferUrl). */
export interface Transfer {
  url: string;
  expires_at: string;
}

/** The record as its creation answers it: a pending document carries the URL its bytes go to. */
export const DocumentWithUploadUrl = closed({
  ...recordFields,
  upload_url: optional(uri('Where the bytes go (PUT or POST, no credential); while the document is pending.')),
  upload_expires_at: optional(timestamp()),
});

export function documentWithUploadUrl(row: DocumentRow, upload: Transfer | undefined): Static<typeof DocumentWithUploadUrl> {
  return { ...documentObject(row), ...(upload && { upload_url: upload.url, upload_expires_at: upload.expires_at }) };
}

/** A grant: a signed URL that redeems one purpose on one document with no other credential. */
const grant = <O extends string>(object: O) => closed({ object: constant(object), document: publicId('document'), url: uri(), expires_at: timestamp() });
export const DocumentUploadGrant = grant('document.upload');
export const DocumentDownloadGrant = grant('document.download');

export function grantObject(purpose: GrantPurpose, document: string, transfer: Transfer): Static<typeof DocumentUploadGrant> | Static<typeof DocumentDownloadGrant> {
  return { object: purpose === 'upload' ? 'document.upload' : 'document.download', document, ...transfer };
}

export const DocumentDeleted = deletion('document', 'document');

export function documentDeleted(id: string): Static<typeof DocumentDeleted> {
  return { id, object: 'document', deleted: true };
}
