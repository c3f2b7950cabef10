import { json, operation, type Resource } from '../operation';

export const openapi: Resource = {
  paths: {
    '/api/v2/openapi.json': {
      get: operation('get', {
        id: 'getOpenApiDocument',
        summary: 'This OpenAPI document',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': json('The OpenAPI 3.1 document.', { type: 'object', required: ['openapi', 'info', 'paths'] }) },
      }),
    },
    '/docs': {
      get: operation('get', {
        id: 'getReference',
        summary: 'The rendered API reference',
        description: 'An HTML page (Redoc) rendering this document; every asset is served by the API itself.',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': { description: 'The reference page.', content: { 'text/html': { schema: { type: 'string' } } } } },
      }),
    },
    '/docs/redoc.standalone.js': {
      get: operation('get', {
        id: 'getReferenceRenderer',
        summary: 'The reference page\'s renderer',
        description: 'Redoc\'s standalone bundle, from the API\'s own node_modules.',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': { description: 'The script.', content: { 'application/javascript': { schema: { type: 'string' } } } } },
      }),
    },
  },
};
