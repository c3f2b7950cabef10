import type { AgentLimits } from './agents';
import { MAX_TOOL_ROUNDS } from './tools';

/**
 * A run's budgets (docs/api.md, "Budgets and limits"): what ends a run whose model would go on
 * calling tools, so that no run can run away. The agent sets them (`limits`), the operator sets the
 * default and the ceiling of model calls, and a `/v1` caller may only lower them.
 */
export const LIMIT_KEYS = ['max_tool_calls', 'max_model_calls', 'max_run_credits', 'max_output_tokens_total'] as const;

/** Why a run ended at a budget: its `incomplete_details.reason`. */
export type LimitReason = (typeof LIMIT_KEYS)[number];

export type { AgentLimits };

/**
 * Model calls a run may make when its agent sets none (RUN_MODEL_CALLS_DEFAULT): up to 7 tool rounds
 * and the answer. Every run's hold counts its calls (domain/billing.ts), so the default is what an
 * agent with tools holds for; one that needs more says so, up to the operator's ceiling.
 */
export const DEFAULT_MAX_MODEL_CALLS = 8;

/** The most model calls an agent may set when the operator sets no ceiling (RUN_MODEL_CALLS_MAX). */
export const DEFAULT_MODEL_CALLS_CEILING = 50;

/** The largest value any limit may have: credits and tokens are bigints nowhere, so well inside a safe integer. */
export const MAX_LIMIT_VALUE = 1_000_000_000;

/** The limits a run runs under, fixed when it is planned (planning/planRun.ts): always a bound on model calls. */
export interface RunLimits {
  max_model_calls: number;
  max_tool_calls?: number;
  max_run_credits?: number;
  max_output_tokens_total?: number;
}

/**
 * What a `/v1` caller asked for, each only lowering the agent's: its tool calls, and the output
 * tokens of its answer (OpenAI's max_output_tokens, max_completion_tokens, max_tokens), which lower
 * both each call's cap and the run's total.
 */
export interface CallerLimits {
  max_tool_calls?: number;
  max_output_tokens?: number;
}

const lower = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

/** The run's limits: the agent's (its model calls within the operator's ceiling, the default when unset), lowered by the caller's. */
export function runLimits(agent: AgentLimits | undefined, service: { defaultModelCalls: number; modelCallsCeiling: number }, caller: CallerLimits = {}): RunLimits {
  const ceiling = Math.max(1, service.modelCallsCeiling);
  const modelCalls = Math.min(agent?.max_model_calls ?? service.defaultModelCalls, ceiling);
  const toolCalls = lower(agent?.max_tool_calls, caller.max_tool_calls);
  const outputTotal = lower(agent?.max_output_tokens_total, caller.max_output_tokens);
  return {
    max_model_calls: Math.max(1, modelCalls),
    ...(toolCalls !== undefined && { max_tool_calls: toolCalls }),
    ...(agent?.max_run_credits !== undefined && { max_run_credits: agent.max_run_credits }),
    ...(outputTotal !== undefined && { max_output_tokens_total: outputTotal }),
  };
}

/**
 * Tool rounds a run may take: one model call follows each, and every round makes one call at least.
 * A run planned before limits existed (none in its input) took MAX_TOOL_ROUNDS.
 */
export function toolRoundsOf(limits: RunLimits | undefined): number {
  if (!limits) return MAX_TOOL_ROUNDS;
  return Math.max(0, Math.min(limits.max_model_calls - 1, limits.max_tool_calls ?? Infinity));
}

/** The budget a run has spent before its next model call, if any: the call is not made, and the run ends. */
export function spentBeforeCall(limits: RunLimits, spent: { calls: number; credits: number; outputTokens: number }): LimitReason | undefined {
  if (spent.calls >= limits.max_model_calls) return 'max_model_calls';
  if (limits.max_run_credits !== undefined && spent.credits >= limits.max_run_credits) return 'max_run_credits';
  if (limits.max_output_tokens_total !== undefined && spent.outputTokens >= limits.max_output_tokens_total) return 'max_output_tokens_total';
  return undefined;
}

/** Whether a reply asking for `asked` tool calls, after `made`, would pass the run's limit on tool calls. */
export function passesToolLimit(limits: RunLimits, made: number, asked: number): boolean {
  return limits.max_tool_calls !== undefined && made + asked > limits.max_tool_calls;
}
