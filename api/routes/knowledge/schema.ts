import * as yup from 'yup';
import { COLLECTION_NAME, COLLECTION_NAME_RULE, INGESTION_STATUSES } from '../../../domain/knowledge';
import { about, described } from '../../../contract/about';
import { publicIdField } from '../../../contract/publicId';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { idFilter, idParam, listQuery, oneOfFilter } from '../../../contract/listQuery';

/** Larger list requests are clamped to this. */
export const MAX_INGESTION_LIMIT = 100;

/** POST /api/v2/knowledge/ingestions: which document becomes knowledge of which collection (DESIGN.md §3). */
export const CreateIngestion = {
  body: yup
    .object({
      document: publicIdField('document', 'document', 'a document id (doc_…)').required('document is required'),
      collection: yup.string().required('collection is required').matches(COLLECTION_NAME, COLLECTION_NAME_RULE).meta(about(`${COLLECTION_NAME_RULE}.`)),
    })
    .noUnknown(true, 'unknown key: ${unknown}')
    .strict(),
  headers: IDEMPOTENCY_HEADERS,
};

export const ReadIngestion = { params: idParam('ingestion', 'an ingestion id (ing_…)') };

/** GET /api/v2/knowledge/ingestions: `status` (unknown value is 400) and `document` filters, cursor paging. */
export const ListIngestions = {
  query: listQuery('ingestion', MAX_INGESTION_LIMIT, {
    status: oneOfFilter('status', INGESTION_STATUSES),
    document: idFilter('document', 'document', 'a document id'),
  }),
};

/** Most passages one search returns. */
export const MAX_SEARCH_LIMIT = 20;
const MAX_SEARCH_COLLECTIONS = 20;

/** POST /api/v2/knowledge/search: a query over named collections of the workspace, and how many passages. */
export const SearchKnowledge = {
  body: yup
    .object({
      query: yup.string().required('query is required').min(1, 'query must not be empty').max(1000, 'query must be at most 1000 characters'),
      collections: yup
        .array(yup.string().required().matches(COLLECTION_NAME, COLLECTION_NAME_RULE))
        .required('collections is required')
        .min(1, 'collections must name at least one collection')
        .max(MAX_SEARCH_COLLECTIONS, `collections names at most ${MAX_SEARCH_COLLECTIONS}`),
      limit: yup.number().integer('limit must be an integer').min(1, 'limit must be at least 1').max(MAX_SEARCH_LIMIT, `limit must be at most ${MAX_SEARCH_LIMIT}`),
      document: described(publicIdField('document', 'document', 'a document id (doc_…)'), 'Narrows the search to this document.'),
    })
    .noUnknown(true, 'unknown key: ${unknown}')
    .strict(),
};
