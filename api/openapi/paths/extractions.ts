import { Extraction } from '../../../domain/extractionRecord';
import { CreateExtraction, ListExtractions, ReadExtraction } from '../../routes/extractions/schema';
import { cursorList } from '../components';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, LOCATION, operation, type Resource } from '../operation';

export const extractions: Resource = {
  schemas: { Extraction },
  paths: {
    '/api/v2/extractions': {
      post: operation('post', {
        id: 'createExtraction',
        summary: 'Extract structured data from a document',
        description: 'Runs the agent (or the built-in extraction agent) over the document\'s text, segment by segment, and merges what each found. Needs credit.',
        tag: 'Extractions',
        access: { credential: 'workspace', scopes: ['extractions:create'] },
        request: CreateExtraction,
        responses: { '202': json('Accepted: the extraction as it stands; poll `Location`.', ref('Extraction'), { ...LOCATION, ...replayMarker('Idempotent-Replay') }) },
        errors: ['document_not_found', 'document_not_uploaded', 'agent_not_found', 'agent_not_available', 'usage_blocked', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listExtractions',
        summary: 'List extractions',
        description: 'Newest first. A document of another workspace gives an empty page, never 403.',
        tag: 'Extractions',
        access: { credential: 'workspace', scopes: ['extractions:read'] },
        request: ListExtractions,
        responses: { '200': json('A page of extractions.', cursorList(ref('Extraction'))) },
      }),
    },
    '/api/v2/extractions/{id}': {
      get: operation('get', {
        id: 'getExtraction',
        summary: 'Read an extraction',
        tag: 'Extractions',
        access: { credential: 'workspace', scopes: ['extractions:read'] },
        request: ReadExtraction,
        responses: { '200': json('The extraction.', ref('Extraction')) },
        errors: ['extraction_not_found'],
      }),
    },
  },
};
