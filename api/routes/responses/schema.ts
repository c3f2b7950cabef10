import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { ExecutionBodyNamingAgent } from '../../../contract/runtimeInput';

/** POST /api/v2/responses: the runtime input, with the agent named in the body (required). */
export const CreateResponse = { body: ExecutionBodyNamingAgent, headers: IDEMPOTENCY_HEADERS };
