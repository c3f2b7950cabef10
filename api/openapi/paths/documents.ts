import { Document, DocumentDeleted, DocumentDownloadGrant, DocumentUploadGrant, DocumentWithUploadUrl } from '../../../domain/documents';
import { CreateDocument, ListDocuments, ReadDocument } from '../../routes/documents/schema';
import { cursorList } from '../components';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

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
  schemas: { Document, DocumentWithUploadUrl, DocumentUploadGrant, DocumentDownloadGrant },
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
        responses: { '200': json('Deleted.', DocumentDeleted) },
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
