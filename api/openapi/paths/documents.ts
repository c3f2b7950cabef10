import { CreateDocument, ListDocuments, ReadDocument } from '../../routes/documents/schema';
import { cursorList } from '../components';
import { replayMarker } from '../execution';
import { closed, constant, integer, oneOfValues, orNull, publicId, ref, string, timestamp, type JsonSchema } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const record: Record<string, JsonSchema> = {
  id: publicId('document'),
  object: constant('document'),
  name: string(),
  mime_type: string({ description: 'As declared at creation; content is always served as an attachment whatever it is.' }),
  size_bytes: integer({ minimum: 1 }),
  status: oneOfValues(['pending', 'uploaded'], '`pending` until its bytes are uploaded, once.'),
  sha256: orNull(string({ pattern: '^[0-9a-f]{64}$', description: 'Of the uploaded bytes.' })),
  created_at: timestamp(),
  uploaded_at: orNull(timestamp()),
};

/** A grant: a signed URL that redeems one purpose on one document with no other credential. */
const grant = (object: string) => closed({ object: constant(object), document: publicId('document'), url: string({ format: 'uri' }), expires_at: timestamp() });

/** Bytes served as a download the browser must neither sniff nor render (api/transfers/documents.ts sendDocument). */
export const DOCUMENT_BYTES = {
  description: 'The document\'s bytes, always as an attachment.',
  headers: {
    'Content-Disposition': { description: '`attachment; filename=…` (not caller-controllable).', schema: { type: 'string' } },
    'X-Content-Type-Options': { description: '`nosniff`.', schema: { type: 'string', const: 'nosniff' } },
    'Content-Security-Policy': { description: '`default-src \'none\'; sandbox`.', schema: { type: 'string' } },
  },
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
};

export const documents: Resource = {
  schemas: {
    Document: closed(record),
    DocumentWithUploadUrl: closed(
      {
        ...record,
        upload_url: string({ format: 'uri', description: 'Where the bytes go (PUT or POST, no credential); while the document is pending.' }),
        upload_expires_at: timestamp(),
      },
      { optional: ['upload_url', 'upload_expires_at'] },
    ),
    DocumentUploadGrant: grant('document.upload'),
    DocumentDownloadGrant: grant('document.download'),
  },
  paths: {
    '/api/v2/documents': {
      post: operation('post', {
        id: 'createDocument',
        summary: 'Create a document (and its upload URL)',
        description: 'The record of a document to upload; its bytes go to `upload_url` (no credential, valid 1 hour by default). Needs credit (402 otherwise).',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:create'] },
        request: CreateDocument,
        responses: { '201': json('The pending document with its upload URL (a replay may show it uploaded, without one).', ref('DocumentWithUploadUrl'), replayMarker('Idempotency-Replayed')) },
        errors: ['usage_blocked', 'storage_quota_exceeded', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listDocuments',
        summary: 'List documents',
        description: 'Newest first; `cursor` in, `next_cursor` out.',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:read'] },
        request: ListDocuments,
        responses: { '200': json('A page of documents.', cursorList(ref('Document'))) },
      }),
    },
    '/api/v2/documents/{id}': {
      get: operation('get', {
        id: 'getDocument',
        summary: 'Read a document\'s record',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:read'] },
        request: ReadDocument,
        responses: { '200': json('The document.', ref('Document')) },
        errors: ['document_not_found'],
      }),
      delete: operation('delete', {
        id: 'deleteDocument',
        summary: 'Delete a document',
        description: 'Its bytes, ingestions and chunks go with it.',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:delete'] },
        request: ReadDocument,
        responses: { '200': json('Deleted.', closed({ id: publicId('document'), object: constant('document'), deleted: { type: 'boolean', const: true } })) },
        errors: ['document_not_found'],
      }),
    },
    '/api/v2/documents/{id}/content': {
      get: operation('get', {
        id: 'getDocumentContent',
        summary: 'Download a document\'s bytes',
        description: 'Always `Content-Disposition: attachment`, `application/octet-stream`, `X-Content-Type-Options: nosniff`: an uploaded HTML or SVG file is never rendered in the API\'s origin.',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:read'] },
        request: ReadDocument,
        responses: { '200': DOCUMENT_BYTES },
        errors: ['document_not_found', 'document_not_uploaded'],
      }),
    },
    '/api/v2/documents/{id}/downloads': {
      post: operation('post', {
        id: 'createDocumentDownload',
        summary: 'Issue a download URL',
        description: 'A signed URL that downloads the bytes with no other credential (15 minutes by default; any number of times until then). Needs credit.',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:read'] },
        request: ReadDocument,
        responses: { '201': json('The grant.', ref('DocumentDownloadGrant')) },
        errors: ['document_not_found', 'document_not_uploaded', 'usage_blocked'],
      }),
    },
    '/api/v2/documents/{id}/uploads': {
      post: operation('post', {
        id: 'createDocumentUpload',
        summary: 'Issue a fresh upload URL',
        description: 'For a pending document whose first grant expired; 409 once uploaded. Needs credit.',
        tag: 'Documents',
        access: { credential: 'workspace', scopes: ['documents:create'] },
        request: ReadDocument,
        responses: { '201': json('The grant.', ref('DocumentUploadGrant')) },
        errors: ['document_not_found', 'document_already_uploaded', 'usage_blocked'],
      }),
    },
  },
};
