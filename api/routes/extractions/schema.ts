import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { EXTRACTION_STATUSES } from '../../../domain/extractions';
import { schemaProblem } from '../../../domain/structuredOutput';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { refined } from '../../../contract/parse';
import { described } from '../../../contract/about';
import { publicIdField } from '../../../contract/publicId';
import { structuredSchema } from '../../../contract/structuredSchema';
import { idFilter, idParam, listQuery, oneOfFilter } from '../../../contract/listQuery';

/** Larger list requests are clamped to this. */
export const MAX_EXTRACTION_LIMIT = 100;

const createExtraction = yup
  .object({
    document: described(publicIdField('document', 'document', 'a document id (doc_…)').required('document is required'), 'An uploaded document of a type ingestion reads.'),
    schema: structuredSchema().required('schema is required'),
    agent: yup.string().max(200),
    instructions: yup.string().min(1).max(4000, 'instructions must be at most 4000 characters'),
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict();

export interface ExtractionRequest {
  document: string;
  schema: Record<string, unknown>;
  agent?: string;
  instructions?: string;
}

/** POST /api/v2/extractions: a document, the JSON schema of what to draw from it (checked like a run's), and optionally an agent and instructions. */
export const CreateExtraction = {
  body: refined(createExtraction, (body): ExtractionRequest => {
    const problem = schemaProblem(body.schema);
    if (problem) throw invalidRequest(problem);
    return body as ExtractionRequest;
  }),
  headers: IDEMPOTENCY_HEADERS,
};

export const ReadExtraction = { params: idParam('extraction', 'an extraction id (ext_…)') };

/** GET /api/v2/extractions: `status` (unknown value is 400) and `document` filters, cursor paging. */
export const ListExtractions = {
  query: listQuery('extraction', MAX_EXTRACTION_LIMIT, {
    status: oneOfFilter('status', EXTRACTION_STATUSES),
    document: idFilter('document', 'document', 'a document id'),
  }),
};
