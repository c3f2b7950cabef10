import Router from '@koa/router';
import { activeAgents } from '../../../db/agents';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import { agentOfModel, modelObject } from '../../openai/models';
import { notFound } from '../../../callers/tenancy';
import type { AppState } from '../../middleware/state';
import { RetrieveModel } from './schema';

/** GET /v1/models and /v1/models/{model}: the workspace's runnable (active) agents, as OpenAI's models. */
export function modelsRoutes(router: Router<AppState>): void {
  router.get('/v1/models', authorize({ scopes: ['responses:create', 'agents:read'], endpoint: 'models' }), async (ctx) => {
    const workspace = workspaceOf(ctx.state.principal);
    ctx.body = { object: 'list', data: (await activeAgents(workspace.id)).map((agent) => modelObject(agent, workspace.publicId)) };
  });

  router.get<{ input: Input<typeof RetrieveModel> }>('/v1/models/:model', validate(RetrieveModel), authorize({ scopes: ['responses:create', 'agents:read'], endpoint: 'models' }), async (ctx) => {
    const workspace = workspaceOf(ctx.state.principal);
    const id = await agentOfModel(workspace.id, ctx.state.input.params.model);
    const agent = (await activeAgents(workspace.id)).find((a) => a.public_id === id);
    if (!agent) throw notFound('agent_not_found');
    ctx.body = modelObject(agent, workspace.publicId);
  });
}
