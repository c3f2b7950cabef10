import * as yup from 'yup';
import { MIME_TYPE } from '../../../domain/documents';
import { config } from '../../../infra/config';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { idParam, listQuery } from '../../../contract/listQuery';
import { about } from '../../../contract/about';

/** Larger list requests are clamped to this. */
export const MAX_DOCUMENT_LIMIT = 100;

const maxBytes = () => config().documents.maxBytes;

const createDocument = yup
  .object({
    name: yup.string().required('name is required').min(1).max(255, 'name must be at most 255 characters'),
    mime_type: yup
      .string()
      .required('mime_type is required')
      .max(255, 'mime_type must be at most 255 characters')
      .matches(MIME_TYPE, 'mime_type must be a media type such as text/plain')
      .meta(about('A media type such as `text/plain` (parameters allowed).')),
    size_bytes: yup
      .number()
      .required('size_bytes is required')
      .integer('size_bytes must be an integer')
      .min(1, 'size_bytes must be at least 1')
      // The bound is configuration (DOCUMENT_MAX_BYTES), read when a request is checked.
      .test({ name: 'maxBytes', message: () => `size_bytes must be at most ${maxBytes()}`, test: (v) => v === undefined || v <= maxBytes() })
      .meta(about('Exactly the length of the upload; at most DOCUMENT_MAX_BYTES (100 MiB by default).')),
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict();

/** POST /api/v2/documents: the record of a document to upload (DESIGN.md §3). */
export const CreateDocument = { body: createDocument, headers: IDEMPOTENCY_HEADERS };

export const ReadDocument = { params: idParam('document', 'a document id (doc_…)') };

export const ListDocuments = { query: listQuery('document', MAX_DOCUMENT_LIMIT) };
