/** Documents: a record, then its bytes, uploaded once through a grant (docs/api.md, "Documents"). */

export type DocumentStatus = 'pending' | 'uploaded';

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

/** The public document record. */
export function documentObject(row: DocumentRow): Record<string, unknown> {
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
