import { invalidRequest } from '../../../domain/errors';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { parseExecutionRequest, type ExecutionRequest } from '../../validation/runtimeInput';

/** POST /api/v2/responses: the runtime input, with the agent named in the body (required). */
export const CreateResponse = {
  body: (value: unknown): ExecutionRequest & { agent: string } => {
    const request = parseExecutionRequest(value);
    if (!request.agent) throw invalidRequest('agent is required.');
    return { ...request, agent: request.agent };
  },
  headers: IDEMPOTENCY_HEADERS,
};
