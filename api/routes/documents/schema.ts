import * as yup from 'yup';
import { MIME_TYPE } from '../../../domain/documents';
import { config } from '../../../infra/config';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { idParam, listQuery } from '../../validation/listQuery';
import { validated } from '../../middleware/validate';

/** Larger list requests are clamped to this. */
export const MAX_DOCUMENT_LIMIT = 100;

/** The size bound is configuration (DOCUMENT_MAX_BYTES), so the schema is built when first used. */
const createDocument = (maxBytes: number) =>
  yup
    .object({
      name: yup.string().required('name is required').min(1).max(255, 'name must be at most 255 characters'),
      mime_type: yup.string().required('mime_type is required').max(255, 'mime_type must be at most 255 characters').matches(MIME_TYPE, 'mime_type must be a media type such as text/plain'),
      size_bytes: yup
        .number()
        .required('size_bytes is required')
        .integer('size_bytes must be an integer')
        .min(1, 'size_bytes must be at least 1')
        .max(maxBytes, `size_bytes must be at most ${maxBytes}`),
    })
    .noUnknown(true, 'unknown key: ${unknown}')
    .strict();
let schema: ReturnType<typeof createDocument> | undefined;

/** POST /api/v2/documents: the record of a document to upload (DESIGN.md §3). */
export const CreateDocument = {
  body: (value: unknown) => validated((schema ??= createDocument(config().documents.maxBytes)), value),
  headers: IDEMPOTENCY_HEADERS,
};

export const ReadDocument = { params: idParam('document', 'a document id (doc_…)') };

export const ListDocuments = { query: listQuery('document', MAX_DOCUMENT_LIMIT) };
