import type Router from '@koa/router';
import { ValidationError } from 'yup';
import { AGENT_STATUSES } from '../../../domain/agents';
import { ServiceError } from '../../../domain/errors';
import { AdminError, createAgent, publishAgent, setAgentStatus, updateAgentDraft } from '../../../admin/commands';
import { agentVersions, findAgentInWorkspace, workspaceAgents } from '../../../db/agents';
import { can, memberPage, render, type PageContext, type PageState } from '../page';

/** The agent, if it is this workspace's (another workspace's is as absent as a made-up id). */
async function ownAgent(ctx: PageContext) {
  const agent = await findAgentInWorkspace(ctx.state.session.workspace.id, ctx.params.id);
  if (!agent) throw new ServiceError('agent_not_found', 'No such agent in this workspace.');
  return agent;
}

async function agentPage(ctx: PageContext, extra: Record<string, unknown> = {}, status = 200): Promise<void> {
  const agent = await ownAgent(ctx);
  const versions = await agentVersions(agent.id);
  const { session } = ctx.state;
  render(
    ctx,
    'agent',
    {
      title: agent.name,
      nav: 'agents',
      agent,
      versions,
      statuses: AGENT_STATUSES,
      draft: JSON.stringify(agent.draftConfig, null, 2),
      canWrite: can(session, 'agents:write'),
      canPublish: can(session, 'agents:publish'),
      notice: NOTICES[String(ctx.query.saved)],
      ...extra,
    },
    status,
  );
}

const NOTICES: Record<string, string> = { draft: 'Draft saved.', published: 'Published.', status: 'Status set.' };

/** A refusal the member can correct (bad JSON, a config the schema refuses, an unknown status): shown on the form. */
function correctable(err: unknown): string | undefined {
  if (err instanceof SyntaxError) return `The configuration is not valid JSON: ${err.message}`;
  if (err instanceof ValidationError || err instanceof AdminError) return err.message;
  return undefined;
}

/** Agents: create, edit the configuration draft (validated), publish, see versions, set status; the admin CLI's code. */
export function agentPages(router: Router<PageState>): void {
  router.get('/dashboard/agents', memberPage('agents:read'), async (ctx) => {
    const agents = await workspaceAgents(ctx.state.session.workspace.id);
    render(ctx, 'agents', { title: 'Agents', nav: 'agents', agents, canWrite: can(ctx.state.session, 'agents:write') });
  });

  router.post('/dashboard/agents', memberPage('agents:write'), async (ctx) => {
    const name = ctx.state.form.get('name')?.trim() ?? '';
    if (!name || name.length > 200) {
      const agents = await workspaceAgents(ctx.state.session.workspace.id);
      return render(ctx, 'agents', { title: 'Agents', nav: 'agents', agents, canWrite: true, error: 'Name the agent (at most 200 characters).' }, 400);
    }
    // A new agent starts as a draft: it runs only once its configuration is published and it is set active.
    const agent = await createAgent({ workspace: ctx.state.session.workspace.publicId, name, status: 'draft' });
    ctx.redirect(`/dashboard/agents/${agent.id}`);
  });

  router.get('/dashboard/agents/:id', memberPage('agents:read'), (ctx) => agentPage(ctx));

  router.post('/dashboard/agents/:id/draft', memberPage('agents:write'), async (ctx) => {
    const agent = await ownAgent(ctx);
    const text = ctx.state.form.get('config') ?? '';
    try {
      await updateAgentDraft({ agent: agent.publicId, config: JSON.parse(text) });
    } catch (err) {
      const problem = correctable(err);
      if (problem) return agentPage(ctx, { error: problem, draft: text }, 400);
      throw err;
    }
    ctx.redirect(`/dashboard/agents/${agent.publicId}?saved=draft`);
  });

  router.post('/dashboard/agents/:id/publish', memberPage('agents:publish'), async (ctx) => {
    const agent = await ownAgent(ctx);
    try {
      await publishAgent({ agent: agent.publicId });
    } catch (err) {
      const problem = correctable(err);
      if (problem) return agentPage(ctx, { error: problem }, 400);
      throw err;
    }
    ctx.redirect(`/dashboard/agents/${agent.publicId}?saved=published`);
  });

  router.post('/dashboard/agents/:id/status', memberPage('agents:write'), async (ctx) => {
    const agent = await ownAgent(ctx);
    try {
      await setAgentStatus({ agent: agent.publicId, status: ctx.state.form.get('status') ?? '' });
    } catch (err) {
      const problem = correctable(err);
      if (problem) return agentPage(ctx, { error: problem }, 400);
      throw err;
    }
    ctx.redirect(`/dashboard/agents/${agent.publicId}?saved=status`);
  });
}
