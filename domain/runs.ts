import type { Static } from '@sinclair/typebox';
import type { IncompleteReason, OutputItemShape, RunResponseShape } from './runResponse';
import type { AgentConfig } from './agents';
import type { ErrorCode, RunStatus } from './errors';
import type { TurnRef } from './turns';
import type { Usage } from './usage';
import type { RequiredAction } from './actions';
import type { ToolTurn } from './tools';
import type { RunLimits } from './limits';

/**
 * What a run was asked for by: /responses (stateless: no copy of the exchange is kept), an agent run
 * or a conversation message (conversational: messages and memory), a report or one segment of an
 * extraction (neither: the answer is kept as the report's or the extraction's result).
 */
export const RUN_KINDS = ['response', 'agent_run', 'message', 'report', 'extraction'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** Whether the run is a turn of a public conversation: it writes messages and may remember. */
export function conversational(kind: RunKind): boolean {
  return kind === 'agent_run' || kind === 'message';
}

/** An item of a run's output: text, a JSON value, a handoff, or a refusal (the model declined: an answer like any other, never repaired, never a 422). Its shape: domain/runResponse.ts. */
export type OutputItem = Static<typeof OutputItemShape>;

/** An item as text: a JSON value serialized, a refusal's explanation, otherwise its text. */
export function itemText(item: OutputItem): string {
  if (item.type === 'json') return JSON.stringify(item.json);
  return item.type === 'refusal' ? item.refusal : item.text;
}

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name?: string; schema: Record<string, unknown>; strict: true };

export interface RunOptions {
  knowledgePolicy: 'auto' | 'none' | 'required';
  memoryPolicy: 'auto' | 'none';
  toolPolicy: 'auto' | 'none' | 'required';
  preview: boolean;
  stream: boolean;
  timeoutMs: number;
  responseFormat: ResponseFormat;
}

export interface Attachment {
  ref: string;
  mime_type?: string;
  name?: string;
  type?: 'file' | 'image' | 'audio' | 'video' | 'document';
}

/**
 * The exchange so far, as a caller of the `/v1` surface sends it whole with each request (stateless,
 * as OpenAI's API is): its own instructions, which follow the agent's, and the earlier messages,
 * which are the run's history instead of a conversation's.
 */
export interface CallerExchange {
  instructions?: string;
  /** Absent when the run continues a stored conversation: its memory is the history. */
  history?: ({ role: 'user'; content: string } | { role: 'assistant'; content: string } | ToolTurn)[];
}

/** Everything a run needs, fixed by the API before the workflow starts. */
export interface RunInput {
  runId: string;
  kind: RunKind;
  requestId: string;
  traceId: string;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null };
  /** `name`: for the Temporal UI's summary of the run (runs planned before it was kept have none). */
  agent: { id: number; publicId: string; name?: string; version: number; config: AgentConfig };
  /** Conversation the run belongs to, when it already exists (posting a message). */
  conversation?: { id: number; publicId: string; channel: string };
  /** agent runs resolve or open their conversation by this reference. */
  externalRef?: string;
  input: string | Record<string, unknown>;
  attachments: Attachment[];
  channel: string;
  locale?: string;
  metadata: Record<string, unknown>;
  requestContext: Record<string, unknown>;
  /** request_context.resource_id, checked reachable by the API: the run's context is narrowed to it. */
  resourceId?: string;
  options: RunOptions;
  /** Milliseconds since epoch when the API accepted the request, for the run's latency. */
  acceptedAt: number;
  /** A `/v1` caller's exchange so far (api/openai/): the history and instructions it sent. */
  exchange?: CallerExchange;
  /**
   * The model's window in tokens when the run was planned (infra/modelWindow.ts): its hold and every
   * call's output cap and history use this figure. Runs planned before it was kept have none.
   */
  contextTokens?: number;
  /** The job whose item this run is: its webhook events carry it as `correlation.job_id`. */
  jobId?: string;
  /** The schedule whose firing this run is: its webhook events carry it as `correlation.schedule_id`. */
  scheduleId?: string;
  /** Turns of its conversation were open when the message was accepted: the run starts after they settle. */
  turn?: TurnRef;
  /** The run's budgets (domain/limits.ts), fixed when it was planned; runs planned before them have none (and take MAX_TOOL_ROUNDS). */
  limits?: RunLimits;
}

/** The run response object (its shape: domain/runResponse.ts): `required_action` while it waits for people, `incomplete_details` when its answer is unfinished. */
export type RunResponse = Static<typeof RunResponseShape>;

/** The run response object; `conversation` only for runs whose conversation is public, `required_action` only while it waits. */
export function toRunResponse(f: {
  id: string;
  status: RunStatus;
  agent: string;
  agentVersion: number;
  conversation?: string;
  output: OutputItem[];
  usage: Usage;
  metadata: Record<string, unknown>;
  requestId: string;
  traceId: string;
  requiredAction?: RequiredAction;
  incompleteReason?: IncompleteReason | null;
}): RunResponse {
  return {
    id: f.id,
    status: f.status,
    agent: f.agent,
    agent_version: f.agentVersion,
    ...(f.conversation && { conversation: f.conversation }),
    output: f.output,
    usage: f.usage,
    metadata: f.metadata,
    request_id: f.requestId,
    trace_id: f.traceId,
    ...(f.requiredAction && { required_action: f.requiredAction }),
    ...(f.incompleteReason && { incomplete_details: { reason: f.incompleteReason } }),
  };
}

/** How a run ended: the response object, and the error when it did not complete. */
export interface RunOutcome {
  run: RunResponse;
  error?: { code: ErrorCode; message: string };
}

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'blocked']);

/** When a run must be over: timeout_ms after it started. */
export interface Deadline {
  /** Milliseconds since epoch. */
  at: number;
  timeoutMs: number;
}

/** How a run that ran out of timeout_ms fails. */
export function timedOut(deadline: Deadline): { code: 'provider_unavailable'; message: string } {
  return { code: 'provider_unavailable', message: `The run did not finish within timeout_ms (${deadline.timeoutMs} ms).` };
}

/** A reply checked against the response format (domain/structuredOutput.ts): its value, or where it fails. */
export type StructuredCheck =
  | { ok: true; value: unknown }
  | { ok: false; paths: string[]; problems: string[] };

/** Spec: structured output is repaired at most once, so a run's number of model calls is known up front. */
export const REPAIR_ATTEMPTS = 1;

/**
 * The run's output when a model reply ends it: no tool calls to make and a reply that passes the
 * response format; undefined when the run goes on (tools, a repair).
 */
export function finalOutput(reply: { text: string; toolCalls: readonly unknown[]; check: StructuredCheck; refusal?: string }, format: ResponseFormat): OutputItem[] | undefined {
  if (reply.toolCalls.length > 0 || !reply.check.ok) return undefined;
  if (reply.refusal !== undefined) return [{ type: 'refusal', refusal: reply.refusal }];
  return format.type === 'text' ? [{ type: 'text', text: reply.text }] : [{ type: 'json', json: reply.check.value }];
}
