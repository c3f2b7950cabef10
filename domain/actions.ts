import type { Static } from '@sinclair/typebox';
import type { RequiredActionShape, RequiredCallShape } from './runResponse';
import type { AgentConfig, ToolConfig } from './agents';
import { MAX_TOOL_ROUNDS } from './tools';
import { mcpMayWait } from './mcpTools';

/**
 * Tool calls that wait for people (docs/api.md, "Actions"): a call of a tool the agent marks
 * `approval: required` waits for a decision, and a call of a tool that `runs_on: client` waits for
 * the caller's output. Beyond the spec: an agent with neither runs exactly as before.
 */
import type { ActionType } from './actionTypes';

/** How long a call waits for its answer when the agent sets no action_timeout_seconds: then it is denied. */
export const DEFAULT_ACTION_TIMEOUT_S = 24 * 60 * 60;
export const MAX_ACTION_TIMEOUT_S = 7 * 24 * 60 * 60;

/** A client tool's output goes back to the model as an HTTP tool's answer does: at most this many characters. */
export const MAX_ACTION_OUTPUT_CHARS = 16 * 1024;

/** What a call of this tool waits for, if anything. */
export function actionOf(tool: ToolConfig): ActionType | undefined {
  if (tool.type !== 'http') return undefined;
  if (tool.runs_on === 'client') return 'client_tool';
  return tool.approval === 'required' ? 'approval' : undefined;
}

export function actionTimeoutMs(config: AgentConfig): number {
  return (config.action_timeout_seconds ?? DEFAULT_ACTION_TIMEOUT_S) * 1000;
}

/**
 * The longest a run of this agent may wait for people in all: one wait per tool round (the calls of
 * one reply wait together). Its workflow's execution timeout makes room for it.
 */
export function longestWaitMs(config: AgentConfig, toolRounds: number = MAX_TOOL_ROUNDS): number {
  return (config.tools ?? []).some((tool) => (tool.type === 'mcp' ? mcpMayWait(tool) : actionOf(tool))) ? toolRounds * actionTimeoutMs(config) : 0;
}

/**
 * One call the run waits on, as the run object and the stream show it: its arguments (what an
 * approver approves, what a client tool runs) and their SHA-256 (hex), which an approval names so
 * that it approves exactly what it was shown. The hash is added where the call is recorded
 * (activities/actions.ts); calls recorded before it existed have none.
 */
/** A call the run waits on, and the run's `required_action` (their shapes: domain/runResponse.ts). */
export type RequiredCall = Static<typeof RequiredCallShape>;

export const actionsPath = (runId: string) => `/api/v2/runs/${runId}/actions`;

export type RequiredAction = Static<typeof RequiredActionShape>;

/** The run object's `required_action`: the calls it waits on and where to answer them. */
export function requiredAction(runId: string, calls: RequiredCall[]): RequiredAction {
  return { calls, submit_to: actionsPath(runId) };
}

/**
 * A caller's answer: a decision for an approval (an approval naming the hash of the arguments it
 * approves), the output for a client tool. `round` is the tool round of the call answered, as it was
 * recorded: the API adds it, and the run's workflow refuses an answer for another round.
 */
export interface ActionAnswer {
  call_id: string;
  round?: number;
  decision?: 'approve' | 'deny';
  arguments_sha256?: string;
  reason?: string;
  output?: string;
}

/** `cancelled`: the run was cancelled while the call waited. */
export type ActionStatus = 'pending' | 'approved' | 'denied' | 'answered' | 'expired' | 'cancelled';

/** What became of a call that waited: the answer to POST /runs/{id}/actions, and to each of its replays. */
export interface ActionOutcome {
  object: 'run.action';
  run: string;
  call_id: string;
  type: ActionType;
  tool: string;
  status: ActionStatus;
  reason?: string;
  answered_at: string | null;
}

/** Whether an answer fits the call it names: a decision for an approval, an output for a client tool. */
export function answerMismatch(type: ActionType, answer: ActionAnswer): string | undefined {
  if (type === 'approval' && answer.decision === undefined) return `${answer.call_id} waits for a decision (approve or deny), not an output.`;
  if (type === 'client_tool' && answer.output === undefined) return `${answer.call_id} waits for the client tool's output, not a decision.`;
  return undefined;
}

/** What the model is told of a call that was not made. */
export function notMadeResult(status: 'denied' | 'expired', reason?: string): string {
  if (status === 'expired') return 'The call was not made: no one answered in time, so it was denied.';
  return `The call was not made: a person denied it${reason ? `: ${reason}` : '.'}`;
}
