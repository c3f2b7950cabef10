import { DEFAULT_MEMORY_MESSAGES, instructionsOf, outputCap, type AgentConfig } from './agents';
import { conversational, REPAIR_ATTEMPTS, type ResponseFormat, type RunInput } from './runs';
import { toolSpecs } from './tools';
import { toolRoundsOf, type RunLimits } from './limits';
import { MCP_SERVER_PROMPT_TOKENS, mcpServersOf } from './mcpTools';
import { estimateTokens, type Usage } from './usage';
import type { ErrorCode } from './errors';
import { KNOWLEDGE_CONTEXT_TOKENS, knowledgePlan } from './knowledge';

/** The ledger line a run bills to: its channel, or the conversation's when it stated none. */
export function ledgerLine(channel: string, conversationChannel: string | undefined): string {
  return channel || conversationChannel || 'api';
}

/** One credit per token: the service's unit of usage. */
export function creditsFor(usage: Usage): number {
  return usage.total_tokens;
}

/**
 * Failures that are the service's own (a bug, a dependency of ours down until the deadline): the run
 * is charged nothing for them, whatever its calls consumed.
 */
export function serviceFault(code: ErrorCode | undefined): boolean {
  return code === 'internal_error' || code === 'service_unavailable';
}

/**
 * The conversation history one call may send, in tokens, as the reservation counts it: max_messages
 * messages of the output cap each. The history sent is cut to it (activities/model.ts), since stored
 * user messages can be far longer and what a call costs above its reservation is never charged.
 */
export function historyTokens(config: AgentConfig, contextTokens: number | undefined): number {
  if (config.memory?.enabled === false) return 0;
  return (config.memory?.max_messages ?? DEFAULT_MEMORY_MESSAGES) * outputCap(config, contextTokens);
}

/**
 * What a run's hold counts for the tool results of one round, in every later call's prompt. A round's
 * results may be more (several calls at once, each up to 16 KiB, at up to a token a character): the
 * run then holds more for them, or cuts them to this (toolRoundExcess).
 */
export const TOOL_RESULT_TOKENS = 4_096;

/**
 * The tokens a round's tool results may cost beyond what the hold counted for them, at a token a
 * character (a CJK text's rate; English runs about four characters a token): each later model call
 * sends them again, so the run holds this much more for each call it may still make.
 */
export function toolRoundExcess(results: string[]): number {
  return Math.max(0, results.reduce((n, r) => n + r.length, 0) - TOOL_RESULT_TOKENS);
}

/** How many more model calls the run may make after `callsMade` (the calls maxRunCost counted). */
export function callsLeft(r: RunCostInput, callsMade: number): number {
  return Math.max(0, callBound(r).calls - callsMade);
}

/**
 * The most a run can cost, known before it starts: every model call it may make (the first, one per
 * tool round its limits allow, the repair), each with the largest prompt it can have by then (the
 * request, the instructions, the history memory sends, the tool rounds before it, the previous
 * answer, the schema and tools it is given) and the output cap; and never more than the run's budget
 * (max_run_credits: a run whose budget is smaller reserves only its budget). The run reserves this
 * from its workspace's balance, and is never charged more than it reserved.
 */
export function maxRunCost(r: RunCostInput): number {
  return Math.min(costOfCalls(r, 0), r.limits?.max_run_credits ?? Infinity);
}

export interface RunCostInput {
  config: AgentConfig;
  request: unknown;
  format: ResponseFormat;
  tools: unknown[];
  /** Remote MCP servers offered: each counts MCP_SERVER_PROMPT_TOKENS of every prompt (their tools are found when the run starts). */
  mcpServers?: number;
  memory: boolean;
  knowledge: boolean;
  /** The model's window the run was planned with (infra/modelWindow.ts); unknown for runs planned before it was kept. */
  contextTokens?: number;
  /** The run's limits (domain/limits.ts); runs planned before them took MAX_TOOL_ROUNDS. */
  limits?: RunLimits;
}

/** What bounds a run's cost, from what it was asked: the same at acceptance (planRun) and while it runs. */
export function costInputOf(run: Pick<RunInput, 'kind' | 'input' | 'attachments' | 'options' | 'exchange' | 'contextTokens' | 'limits'> & { config: AgentConfig }): RunCostInput {
  return {
    config: run.config,
    // A /v1 caller's exchange is sent with every call, as the request is.
    request: [run.input, run.attachments, ...(run.exchange ? [run.exchange] : [])],
    format: run.options.responseFormat,
    tools: toolSpecs(run.config, run.options.toolPolicy),
    mcpServers: mcpServersOf(run.config, run.options.toolPolicy).length,
    memory: conversational(run.kind) && run.options.memoryPolicy === 'auto',
    knowledge: knowledgePlan(run.config, run.options.knowledgePolicy).collections.length > 0,
    ...(run.contextTokens !== undefined && { contextTokens: run.contextTokens }),
    ...(run.limits && { limits: run.limits }),
  };
}

/**
 * What bounds a run's calls: how many it may make, and the most call `i` (from 0) can cost. Call i
 * sends the tool rounds before it (at most i), so later calls are counted larger, not every call as
 * the last: a run allowed many rounds holds what they can cost, no more.
 */
function callBound(r: RunCostInput): { calls: number; costOf: (i: number) => number } {
  const mcp = r.mcpServers ?? 0;
  const toolsOffered = r.tools.length > 0 || mcp > 0;
  const output = outputCap(r.config, r.contextTokens);
  const rounds = toolsOffered ? toolRoundsOf(r.limits) : 0;
  const wanted = 1 + rounds + (r.format.type === 'text' ? 0 : REPAIR_ATTEMPTS);
  const calls = Math.min(wanted, r.limits?.max_model_calls ?? Infinity);
  const history = r.memory ? historyTokens(r.config, r.contextTokens) : 0;
  // Every call sends the instructions, the request, the response format (its schema), the tools offered and the retrieved passages.
  const fixed = estimateTokens(JSON.stringify([instructionsOf(r.config), r.request, r.format, r.tools])) + mcp * MCP_SERVER_PROMPT_TOKENS + history + output + (r.knowledge ? KNOWLEDGE_CONTEXT_TOKENS : 0);
  // A call's prompt and output share the model's window: no call uses more (activities/model.ts fits the history to it).
  const costOf = (i: number) => Math.min(fixed + Math.min(i, rounds) * (TOOL_RESULT_TOKENS + output) + output, r.contextTokens ?? Infinity);
  return { calls, costOf };
}

/** The most the calls from `from` on can cost, `extraPerCall` more each. */
function costOfCalls(r: RunCostInput, from: number, extraPerCall = 0): number {
  const { calls, costOf } = callBound(r);
  let total = 0;
  for (let i = from; i < calls; i++) total += costOf(i) + extraPerCall;
  return total;
}

/**
 * What a run that waits for people keeps held (docs/api.md, "Actions"): what it has consumed, and the
 * most its calls still to come may cost (`extraPerCall`: what it held more for each of them for large
 * tool results, toolRoundExcess). The rest goes back to the balance while it waits.
 */
export function heldWhileWaiting(r: RunCostInput, callsMade: number, consumed: number, extraPerCall = 0): number {
  // A budgeted run holds no more than its budget (or what it has consumed, when its last call went past it).
  return Math.min(consumed + costOfCalls(r, callsMade, extraPerCall), Math.max(r.limits?.max_run_credits ?? Infinity, consumed));
}
