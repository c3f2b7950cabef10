import { KnowledgeIngestion, PassageList } from '../../../domain/knowledgeRecords';
import { CreateIngestion, ListIngestions, ReadIngestion, SearchKnowledge } from '../../routes/knowledge/schema';
import { cursorList } from '../components';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, LOCATION, operation, type Resource } from '../operation';

export const knowledge: Resource = {
  schemas: { KnowledgeIngestion },
  paths: {
    '/api/v2/knowledge/ingestions': {
      post: operation('post', {
        id: 'createIngestion',
        summary: 'Turn a document into knowledge',
        description: 'Ingests an uploaded document into a collection (which comes into being with its first ingestion); the caller polls the record. A second request while one is queued or running for the same document and collection answers with that one.',
        tag: 'Knowledge',
        access: { credential: 'workspace', scopes: ['knowledge:write'] },
        request: CreateIngestion,
        responses: { '202': json('Accepted: the ingestion as it stands.', ref('KnowledgeIngestion'), { ...LOCATION, ...replayMarker('Idempotency-Replayed') }) },
        errors: ['document_not_found', 'document_not_uploaded', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listIngestions',
        summary: 'List knowledge ingestions',
        description: 'Newest first. A document of another workspace gives an empty page.',
        tag: 'Knowledge',
        access: { credential: 'workspace', scopes: ['knowledge:read'] },
        request: ListIngestions,
        responses: { '200': json('A page of ingestions.', cursorList(ref('KnowledgeIngestion'))) },
      }),
    },
    '/api/v2/knowledge/search': {
      post: operation('post', {
        id: 'searchKnowledge',
        summary: 'Search knowledge',
        description: 'The passages a run would retrieve for this query: the same full-text index and ranking. Collections that do not exist hold nothing (an empty list, never a 404).',
        tag: 'Knowledge',
        access: { credential: 'workspace', scopes: ['knowledge:read'] },
        request: SearchKnowledge,
        responses: { '200': json('The passages, best first.', PassageList) },
      }),
    },
    '/api/v2/knowledge/ingestions/{id}': {
      get: operation('get', {
        id: 'getIngestion',
        summary: 'Read a knowledge ingestion',
        tag: 'Knowledge',
        access: { credential: 'workspace', scopes: ['knowledge:read'] },
        request: ReadIngestion,
        responses: { '200': json('The ingestion.', ref('KnowledgeIngestion')) },
        errors: ['ingestion_not_found'],
      }),
    },
  },
};
