import type { AgentConfig, McpToolConfig, ToolConfig } from './agents';

/** Tool rounds a run may take before it must answer: with the repair, the call count is known up front. */
export const MAX_TOOL_ROUNDS = 4;

export const HANDOFF_TOOL = 'handoff';

/**
 * What a tool's server may send for one call: an HTTP tool's answer is kept up to it (the rest is not
 * read), and an MCP server's answer to one tools/call must fit in it, or the server is cut off.
 */
export const MAX_TOOL_ANSWER_BYTES = 16 * 1024;

export interface ToolSpec {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

export interface ToolCall {
  /** Unique among the calls of its reply (domain/callIds.ts). */
  id: string;
  name: string;
  arguments: string;
  /** The provider's id for the call, where it was not unique in the reply and the call got one of its own. */
  providerId?: string;
}

/**
 * A round's tool results cut to `budget` characters in all, when the run cannot hold more for them:
 * the short ones whole, the long ones sharing the rest equally, each cut one saying so.
 */
export function fitToolResults(results: string[], budget: number): string[] {
  const total = results.reduce((n, r) => n + r.length, 0);
  if (total <= budget) return results;
  // The share of each result longer than it: what is left once the shorter ones are whole.
  const byLength = [...results].sort((a, b) => a.length - b.length);
  let left = budget;
  let share = 0;
  for (const [i, r] of byLength.entries()) {
    share = Math.floor(left / (byLength.length - i));
    if (r.length > share) break;
    left -= r.length;
  }
  // The note that a result was cut counts against its share too.
  const cut = (r: string) => {
    const note = (kept: number) => `\n[cut to ${kept} of ${r.length} characters: the run's credit hold covers no more]`;
    const kept = Math.max(0, share - note(share).length);
    return `${r.slice(0, kept)}${note(kept)}`;
  };
  return results.map((r) => (r.length <= share ? r : cut(r)));
}

/** The transcript of tool rounds so far, in the provider's wire shape. */
export type ToolTurn =
  | { role: 'assistant'; content: string | null; tool_calls: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

/** The agent's own tools: a remote MCP server's are found at run start (domain/mcpTools.ts). */
export type OwnToolConfig = Exclude<ToolConfig, McpToolConfig>;

const ownTools = (config: AgentConfig): OwnToolConfig[] => (config.tools ?? []).filter((tool): tool is OwnToolConfig => tool.type !== 'mcp');

function nameOf(tool: OwnToolConfig): string {
  return tool.type === 'handoff' ? tool.name ?? HANDOFF_TOOL : tool.name;
}

/** What the model is offered of the agent's own tools, or none when the policy says so. */
export function toolSpecs(config: AgentConfig, policy: 'auto' | 'none' | 'required'): ToolSpec[] {
  if (policy === 'none') return [];
  return ownTools(config).map((tool) =>
    tool.type === 'handoff'
      ? {
          name: nameOf(tool),
          description: tool.description ?? 'Stop and hand the conversation to a person.',
          parameters: { type: 'object', properties: { reason: { type: 'string', description: 'Why a person is needed.' } } },
        }
      : { name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object', properties: {} } },
  );
}

export function findTool(config: AgentConfig, name: string): OwnToolConfig | undefined {
  return ownTools(config).find((tool) => nameOf(tool) === name);
}
