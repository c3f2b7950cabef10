import type { AgentConfig, McpToolConfig } from './agents';
import type { ToolSpec } from './tools';
import { estimateTokens } from './usage';

/**
 * Remote MCP servers as an agent's tools (docs/api.md, "MCP servers as tools"). The model sees each
 * allowed tool of a server as `<server_label>__<tool>`, so two servers never collide; a run calls
 * only the names it offered, each mapped to its server and tool when offered (never split back).
 */
export const MCP_NAME_SEPARATOR = '__';

/**
 * A server label: what prefixes its tools' names (a model's function name is at most 64 characters).
 * No `__`, and no `_` at either end, so `<label>__<tool>` never reads as another label's name.
 */
export const MCP_LABEL = /^(?!_)(?!.*__)(?!.*_$)[a-zA-Z0-9_-]{1,32}$/;
export const MCP_LABEL_RULE = 'server_label must be 1-32 letters, digits, _ or -, without "__" and not beginning or ending with "_"';

/** An agent's MCP servers, at most: each is listed when a run starts, and counted in every prompt. */
export const MAX_MCP_SERVERS = 10;

/** A tool the run offered the model: its server, and its own name there. */
export interface OfferedMcpTool {
  server: McpToolConfig;
  tool: string;
}

/**
 * What a server's offered tools may take of every model call's prompt: the run's credit hold counts
 * this much for each server (its tools are found only when the run starts), and tools past it are
 * left out, so the hold always covers what is sent.
 */
export const MCP_SERVER_PROMPT_TOKENS = 4_096;

/** What a model provider takes as a function's name: a tool whose full name is not one is not offered. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** One tool as a server lists it (tools/list). */
export interface McpToolListing {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The agent's MCP servers, or none when the policy offers no tools. */
export function mcpServersOf(config: AgentConfig, policy: 'auto' | 'none' | 'required'): McpToolConfig[] {
  if (policy === 'none') return [];
  return (config.tools ?? []).filter((tool): tool is McpToolConfig => tool.type === 'mcp');
}

export function mcpToolName(label: string, tool: string): string {
  return `${label}${MCP_NAME_SEPARATOR}${tool}`;
}

/** Whether the agent lets the model call this tool of the server (allowed_tools, when given). */
export function mcpToolAllowed(server: McpToolConfig, tool: string): boolean {
  return server.allowed_tools === undefined || server.allowed_tools.includes(tool);
}

/** Whether a call of this tool waits for a person's decision first. */
export function mcpApprovalRequired(server: McpToolConfig, tool: string): boolean {
  const approval = server.approval ?? 'never';
  if (typeof approval === 'string') return approval === 'required';
  return approval.tools[tool] === 'required';
}

/** Whether any call of the server's tools may wait for a decision (the run's workflow makes room for the wait). */
export function mcpMayWait(server: McpToolConfig): boolean {
  const approval = server.approval ?? 'never';
  return typeof approval === 'string' ? approval === 'required' : Object.values(approval.tools).includes('required');
}

/**
 * What the model is offered of a server's listing: its allowed tools, named with the label, in the
 * listing's order, as many as MCP_SERVER_PROMPT_TOKENS covers (and none whose name a provider would
 * refuse: MCP allows dots and 128 characters).
 */
export function offeredMcpTools(server: McpToolConfig, listing: McpToolListing[]): (ToolSpec & { tool: string })[] {
  const offered: (ToolSpec & { tool: string })[] = [];
  let tokens = 0;
  for (const tool of listing) {
    if (!mcpToolAllowed(server, tool.name) || !FUNCTION_NAME.test(mcpToolName(server.server_label, tool.name))) continue;
    const spec: ToolSpec = { name: mcpToolName(server.server_label, tool.name), ...(tool.description && { description: tool.description }), parameters: tool.inputSchema };
    tokens += estimateTokens(JSON.stringify(spec));
    if (tokens > MCP_SERVER_PROMPT_TOKENS) break;
    offered.push({ ...spec, tool: tool.name });
  }
  return offered;
}
