import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import type { Input } from '../../../contract/parse';
import { listQuery } from '../../../contract/listQuery';
import { ExecutionBody } from '../../../contract/runtimeInput';

/** POST /api/v2/agents/{agent_id}/runs: the runtime input; the agent comes from the path. */
export const CreateAgentRun = {
  params: yup.object({ agent_id: yup.string().required() }),
  body: ExecutionBody,
  headers: IDEMPOTENCY_HEADERS,
};

export function sameAgent({ params, body }: Input<typeof CreateAgentRun>): void {
  if (body.agent !== undefined && body.agent !== params.agent_id) throw invalidRequest('agent is taken from the URL; a different agent in the body is refused.');
}

/** Larger list requests are clamped to this. */
export const MAX_AGENT_LIMIT = 100;

/** GET /api/v2/agents: `limit` (clamped) and the opaque `cursor` of a previous page. */
export const ListAgents = { query: listQuery('agent', MAX_AGENT_LIMIT) };
