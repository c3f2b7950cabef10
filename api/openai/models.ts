import { notFound } from '../../callers/tenancy';
import { ServiceError } from '../../domain/errors';
import { hasPrefix } from '../../domain/ids';
import { agentNamed, type ModelListing } from '../../db/agents';
import type { ModelObject } from './shapes';

/**
 * The agent a `model` names: its id, or its name where the workspace has one agent of that name.
 * An unknown one is the same 404 `agent_not_found` as /api/v2's, naming `model`.
 */
export async function agentOfModel(workspaceId: number, model: string): Promise<string> {
  if (hasPrefix('agent', model)) return model;
  const named = await agentNamed(workspaceId, model);
  if (named) return named;
  throw new ServiceError('agent_not_found', notFound('agent_not_found').message, {}, 'model');
}

/** An agent as OpenAI's model object: its id is the agent's, and the workspace owns it. */
export function modelObject(agent: ModelListing, workspacePublicId: string): ModelObject {
  return { id: agent.public_id, object: 'model', created: Math.floor(agent.created_at.getTime() / 1000), owned_by: workspacePublicId, name: agent.name };
}
