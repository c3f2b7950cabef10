import Router from '@koa/router';
import { execute } from '../../execution/execution';
import { authorize } from '../../middleware/auth';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { agentPage } from '../../../db/agents';
import { agentObject } from '../../../domain/agentRecord';
import { listPage } from '../listPage';
import { workspaceOf } from '../../../callers/principal';
import { CreateAgentRun, ListAgents, sameAgent } from './schema';

/**
 * GET /api/v2/agents: the workspace's agents. POST /api/v2/agents/{agent_id}/runs: the agent from the URL on a structured payload plus a task
 * line; answers with the conversation, which `external_ref` resolves to the same one every time.
 */
export function agentsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateAgentRun> }>(
    '/api/v2/agents/:agent_id/runs',
    validate(CreateAgentRun, sameAgent),
    authorize({ scopes: ['agents:run'], endpoint: 'agent_runs', agent: (ctx) => ctx.state.input.params.agent_id, endUser: (ctx) => ctx.state.input.body.externalRef }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { params, body } = ctx.state.input;
      await execute(ctx, body, { kind: 'agent_run', agentPublicId: params.agent_id });
    },
  );

  // The workspace's agents, newest first: what a client (or an MCP tool) can run, never their configuration.
  router.get<{ input: Input<typeof ListAgents> }>('/api/v2/agents', validate(ListAgents), authorize({ scopes: ['agents:read'], endpoint: 'agents_list' }), async (ctx) => {
    const { limit, after } = ctx.state.input.query;
    const rows = await agentPage(workspaceOf(ctx.state.principal).id, after, limit + 1);
    ctx.body = listPage(rows, limit, agentObject);
  });
}
