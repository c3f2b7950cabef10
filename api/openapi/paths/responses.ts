import { CreateResponse } from '../../routes/responses/schema';
import { EXECUTION_ERRORS, executionResponses } from '../execution';
import { operation, type Resource } from '../operation';

export const responses: Resource = {
  paths: {
    '/api/v2/responses': {
      post: operation('post', {
        id: 'createResponse',
        summary: 'Run an agent statelessly',
        description: 'General-purpose, stateless execution of the agent named in the body. Answers the run without `conversation`; leaves a record of the request and its cost but no copy of the exchange.',
        tag: 'Execution',
        access: { credential: 'workspace', scopes: ['responses:create'] },
        request: CreateResponse,
        responses: executionResponses(),
        errors: EXECUTION_ERRORS,
      }),
    },
  },
};
