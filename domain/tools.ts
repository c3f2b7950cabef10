import type { AgentConfig, ToolConfig } from './agents';

/** Tool rounds a run may take before it must answer: with the repair, the call count is known up front. */
export const MAX_TOOL_ROUNDS = 4;

export const HANDOFF_TOOL = 'handoff';

export interface ToolSpec {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A model's tool-call arguments as every later step takes them: a NUL or a lone surrogate (which
 * PostgreSQL cannot store, in text or jsonb) becomes U+FFFD, once, where the reply arrives, so that
 * what an approver is shown, what is recorded and what is called are the same text.
 */
export function storableText(text: string): string {
  return text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** The transcript of tool rounds so far, in the provider's wire shape. */
export type ToolTurn =
  | { role: 'assistant'; content: string | null; tool_calls: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

function nameOf(tool: ToolConfig): string {
  return tool.type === 'handoff' ? tool.name ?? HANDOFF_TOOL : tool.name;
}

/** What the model is offered: the agent's tools, or none when the policy says so. */
export function toolSpecs(config: AgentConfig, policy: 'auto' | 'none' | 'required'): ToolSpec[] {
  if (policy === 'none') return [];
  return (config.tools ?? []).map((tool) =>
    tool.type === 'handoff'
      ? {
          name: nameOf(tool),
          description: tool.description ?? 'Stop and hand the conversation to a person.',
          parameters: { type: 'object', properties: { reason: { type: 'string', description: 'Why a person is needed.' } } },
        }
      : { name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object', properties: {} } },
  );
}

export function findTool(config: AgentConfig, name: string): ToolConfig | undefined {
  return (config.tools ?? []).find((tool) => nameOf(tool) === name);
}
