import { ServiceError } from './errors';

/** Earlier messages a conversation's run sends when the agent's memory sets no max_messages. */
export const DEFAULT_MEMORY_MESSAGES = 20;

/**
 * Output a model call may produce when the agent sets no max_output_tokens. It is sent to the provider
 * as the call's cap, so a run's cost is bounded before it starts (its credit reservation).
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4_096;

/**
 * What an agent that sets no instructions is told (docs/api.md, "Agents"). Without any, a small model
 * asked "hello" may run on to its output cap; asked to be brief, it answers in a sentence.
 */
export const DEFAULT_INSTRUCTIONS = 'You are a helpful assistant. Answer the user directly and briefly, in plain language.';

/** The agent's instructions, or the default when it sets none. */
export function instructionsOf(config: AgentConfig): string {
  return config.instructions?.trim() ? config.instructions : DEFAULT_INSTRUCTIONS;
}

/**
 * The most one call may produce: the agent's max_output_tokens (or the default), and never more than
 * the model's window (`contextTokens`, unknown for runs planned before it was kept).
 */
export function outputCap(config: AgentConfig, contextTokens: number | undefined): number {
  return Math.min(config.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS, contextTokens ?? Infinity);
}

export const AGENT_STATUSES = ['active', 'draft', 'paused', 'preview', 'archived'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** Statuses that may execute with the preview option and the agent:preview scope. */
const PREVIEWABLE: ReadonlySet<AgentStatus> = new Set(['active', 'draft', 'paused', 'preview']);

interface FunctionTool {
  type: 'http';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

/** A tool the service calls over HTTP; `approval: required` makes each call wait for a person's decision first. */
export interface HttpToolConfig extends FunctionTool {
  url: string;
  runs_on?: 'service';
  approval?: 'required';
}

/** A tool the caller runs: each call waits for the caller's output (domain/actions.ts). */
export interface ClientToolConfig extends FunctionTool {
  runs_on: 'client';
}

export interface HandoffToolConfig {
  type: 'handoff';
  name?: string;
  description?: string;
}

/**
 * A remote MCP server whose tools the agent may call (domain/mcpTools.ts): the model sees each
 * allowed tool as `<server_label>__<tool>`; `credential` names a workspace secret sent as a bearer token.
 */
export interface McpToolConfig {
  type: 'mcp';
  server_label: string;
  server_url: string;
  /** Only these of the server's tools are offered (all when absent). */
  allowed_tools?: string[];
  /** Which calls wait for a person's decision first: all, none (the default), or per tool. */
  approval?: McpApproval;
  credential?: string;
}

export type McpApproval = 'required' | 'never' | { tools: Record<string, 'required' | 'never'> };

export type ToolConfig = HttpToolConfig | ClientToolConfig | HandoffToolConfig | McpToolConfig;

/** An agent's budgets, each a positive integer (domain/limits.ts: what a run does at each). */
export interface AgentLimits {
  max_tool_calls?: number;
  max_model_calls?: number;
  max_run_credits?: number;
  max_output_tokens_total?: number;
}

/** What callers may not send: it comes only from here. */
export interface AgentConfig {
  instructions?: string;
  model?: string;
  /** Where a call goes when the model's provider is rate limited, failing or unreachable, in order: `provider/model` names (domain/modelRoutes.ts). */
  fallback_models?: string[];
  temperature?: number;
  tools?: ToolConfig[];
  knowledge?: { collections?: string[]; policy?: 'auto' | 'none' | 'required' };
  memory?: { enabled?: boolean; max_messages?: number };
  max_output_tokens?: number;
  /** How long a tool call waits for a person's decision or the caller's output before it is denied. */
  action_timeout_seconds?: number;
  /** The run's budgets (domain/limits.ts): a run that reaches one ends, completed and incomplete. */
  limits?: AgentLimits;
}

export type ConfigurationChoice = 'published' | 'draft';

/**
 * Which configuration a run may use, or why it may not run. Without agent:preview a preview
 * request is indistinguishable from a missing agent, so the existence of a draft is not confirmed.
 */
export function chooseConfiguration(status: AgentStatus, preview: boolean, canPreview: boolean): ConfigurationChoice {
  if (preview) {
    if (!canPreview) throw new ServiceError('agent_not_found', 'No such agent.');
    if (PREVIEWABLE.has(status)) return 'draft';
    throw new ServiceError('agent_not_available', `Agent is ${status} and cannot run.`);
  }
  if (status === 'active') return 'published';
  throw new ServiceError('agent_not_available', `Agent is ${status}; it runs only with the preview option.`);
}
