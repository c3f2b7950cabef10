import { Agent } from '../../../domain/agentRecord';
import { EXECUTION_ERRORS, executionResponses } from '../execution';
import { CreateAgentRun, ListAgents } from '../../routes/agents/schema';
import { cursorList } from '../components';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

export const agents: Resource = {
  schemas: { Agent },
  paths: {
    '/api/v2/agents': {
      get: operation('get', {
        id: 'listAgents',
        summary: 'List agents',
        description: 'The workspace\'s agents, newest first; `cursor` in, `next_cursor` out.',
        tag: 'Agents',
        access: { credential: 'workspace', scopes: ['agents:read'] },
        request: ListAgents,
        responses: { '200': json('A page of agents.', cursorList(ref('Agent'))) },
      }),
    },
    '/api/v2/agents/{agent_id}/runs': {
      post: operation('post', {
        id: 'createAgentRun',
        summary: 'Run an agent on a structured payload',
        description:
          'Non-conversational: a structured payload plus a task line. The agent comes from the URL (a different `agent` in the body is a 400); `external_ref` resolves the same conversation every time. With `response_format` the reply is parsed, pruned to the schema\'s keys, validated and repaired at most once; still invalid is 422 `structured_output_failed` naming the failing paths, never their values.',
        tag: 'Execution',
        access: { credential: 'workspace', scopes: ['agents:run'] },
        request: CreateAgentRun,
        responses: executionResponses(),
        errors: EXECUTION_ERRORS,
      }),
    },
  },
};
