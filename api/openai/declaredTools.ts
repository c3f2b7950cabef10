import { ServiceError } from '../../domain/errors';
import { findRunnableAgent } from '../../db/agents';

/**
 * Function tools a caller declares are refused, since tools are decided by the agent, except the
 * agent's own client-run tools, by name: an SDK that loops over tool calls declares the ones it runs.
 * The agent's definition is what the model sees.
 */
export async function checkDeclaredTools(workspaceId: number, agentPublicId: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  const agent = await findRunnableAgent(workspaceId, agentPublicId);
  const clientRun = new Set((agent?.publishedConfig?.tools ?? []).flatMap((t) => (t.type === 'http' && t.runs_on === 'client' ? [t.name] : [])));
  const foreign = names.find((name) => !clientRun.has(name));
  if (foreign !== undefined) throw new ServiceError('invalid_request', `tools: "${foreign}" is not a client-run tool of the agent; tools are decided by the agent configuration.`, {}, 'tools');
}
