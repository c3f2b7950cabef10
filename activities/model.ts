import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { DEFAULT_MEMORY_MESSAGES, type AgentConfig } from '../domain/agents';
import { historyTokens } from '../domain/billing';
import { checkStructured, CUT_OFF_PROBLEM } from '../domain/structuredOutput';
import { itemText, type Attachment, type CallerExchange, type Deadline, type OutputItem, type ResponseFormat, type StructuredCheck } from '../domain/runs';
import { estimateTokens, type Usage } from '../domain/usage';
import { callSignal, deadlineFailure, heartbeating } from './bounded';
import { RunEvents } from './runEvents';
import { untilAvailable } from './untilAvailable';
import { DeltaWindow } from './deltaWindow';
import { watchCancel } from './cancelNotices';
import { CANCEL_CONFIRM_FIRST_MS, MODEL_HEARTBEAT_TIMEOUT_MS } from '../domain/timings';
import { recentMessages } from '../db/messages';
import { providerFormat } from './providers/responseFormat';
import { countedUsage } from './tokenCount';
import { addConsumedUsage, runWorkspace } from '../db/runs';
import { assemblePrompt, userContent } from './prompt';
import { fitToWindow } from './contextWindow';
import { providerOf } from './providers';
import { routedComplete, type RouteNote } from './providers/router';
import { StoppedWaiting } from './providers/waiting';
import { ProviderError, type ChatMessage } from './providers/types';
import type { StreamEventType } from '../domain/streamEvents';
import { ownCallIds } from '../domain/callIds';
import { storableText } from '../domain/storable';
import type { ToolCall, ToolSpec, ToolTurn } from '../domain/tools';
import type { Passage } from '../domain/knowledge';

export interface GenerateInput {
  runId: string;
  /** The run's W3C trace id: the provider request carries it (absent in calls scheduled before it was passed). */
  traceId?: string;
  /** The call stops itself at the run's deadline, recording what it consumed, and fails the run. */
  deadline: Deadline;
  config: AgentConfig;
  input: string | Record<string, unknown>;
  attachments: Attachment[];
  /** Earlier turns are read from this conversation when memory applies. */
  historyFrom?: { conversationId: number; beforeRunKey: number };
  format: ResponseFormat;
  repair?: { previous: string; problems: string[] };
  /** Stream output chunks to the run's event stream as they arrive. */
  stream: boolean;
  /** Model calls of this run are numbered from 1: chunks carry it so a client can tell the calls apart. */
  call: number;
  /** Tools offered, how the model must use them, and the tool rounds so far. */
  tools: ToolSpec[];
  toolChoice: 'auto' | 'required';
  toolTurns: ToolTurn[];
  /** Passages retrieved for the run, sent as labelled context with every call. */
  knowledge?: Passage[];
  /** The model's window the run was planned with (RunInput.contextTokens): the prompt is fitted to it. */
  contextTokens?: number;
  /** A /v1 caller's exchange (RunInput.exchange): its history instead of a conversation's, and its instructions after the agent's. */
  exchange?: CallerExchange;
}

export interface GenerateResult {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** The provider reported no usage: `usage` was counted here (activities/tokenCount.ts). */
  usageEstimated?: boolean;
  /** The model declined to answer; the run's output is a refusal item. */
  refusal?: string;
  model: string;
  check: StructuredCheck;
  /** Earlier messages of the conversation memory would have sent, left out to fit the run's hold or the model's window. */
  historyOmitted?: number;
  /** The reply stopped at the call's output cap (`finish_reason: length`). */
  truncated?: boolean;
  /** A fallback taken or a wait for a provider, for the run's timeline (activities/providers/router.ts). */
  route?: RouteNote;
}


function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return (content as OutputItem[]).map(itemText).join('\n');
  }
  return JSON.stringify(content);
}

/**
 * The conversation's latest messages, as many as memory keeps and, newest first, as fit the tokens
 * the run's reservation counted for history (historyTokens): older ones are left out, and counted.
 */
async function loadHistory(input: GenerateInput): Promise<{ history: ChatMessage[]; omitted: number }> {
  if (input.exchange?.history) return { history: input.exchange.history, omitted: 0 };
  if (!input.historyFrom || input.config.memory?.enabled === false) return { history: [], omitted: 0 };
  const messages = await recentMessages(input.historyFrom.conversationId, input.historyFrom.beforeRunKey, input.config.memory?.max_messages ?? DEFAULT_MEMORY_MESSAGES);
  const history = messages.map((m): ChatMessage =>
    m.role === 'user'
      ? { role: 'user', content: userContent(m.content as string | Record<string, unknown>, []) }
      : { role: 'assistant', content: textOf(m.content) },
  );
  let budget = historyTokens(input.config, input.contextTokens);
  let from = history.length;
  while (from > 0 && (budget -= estimateTokens(JSON.stringify(history[from - 1].content))) >= 0) from--;
  return { history: history.slice(from), omitted: from };
}

/**
 * One model call. The activity heartbeats so a cancelled run (client gone, cancel endpoint, timeout)
 * reaches it and aborts the provider request; provider failures become typed failures whose
 * retryability the declared retry policy honours.
 */
export function generate(input: GenerateInput): Promise<GenerateResult> {
  recordStartLag(Context.current());
  return heartbeating(() => callModel(input));
}

/** The metric's name, which the worker's runtime gives buckets fine below 100 ms (workers/worker.ts). */
export const MODEL_CALL_START_LAG = 'aes_model_call_start_lag_seconds';

/**
 * How long after Temporal scheduled a model-call activity its code started in this worker. A run's
 * first call is dispatched eagerly (in the answer to the workflow task that scheduled it), which
 * Temporal counts as started at once, so its schedule-to-start latency stays 0 however long the call
 * then waits for this process's threads and cores: this is where that wait shows (docs/operations.md,
 * Scaling). Measured against the server's clock, so clock skew between hosts adds to it.
 */
export function recordStartLag(ctx: Context): void {
  const scheduled = ctx.info.currentAttemptScheduledTimestampMs;
  if (!scheduled) return;
  ctx.metricMeter
    .createHistogram(MODEL_CALL_START_LAG, 'float', 's', 'Seconds from Temporal scheduling a model-call activity to its code starting in this worker, eager dispatch included.')
    .record(Math.max(0, Date.now() - scheduled) / 1000);
}

/** Model calls this worker process has in flight: the worker's saturation, beside its free activity slots. */
let callsInFlight = 0;

function countCall(ctx: Context, change: 1 | -1): void {
  callsInFlight += change;
  ctx.metricMeter.createGauge('aes_model_calls_in_flight', 'int', 'calls', 'Model calls this worker process has in flight now.').set(callsInFlight);
}

/** The model call itself, for activities that heartbeat around more than the call (startRun). */
export async function callModel(input: GenerateInput): Promise<GenerateResult> {
  const ctx = Context.current();
  countCall(ctx, 1);
  try {
    return await call(ctx, input);
  } finally {
    countCall(ctx, -1);
  }
}

async function call(ctx: Context, input: GenerateInput): Promise<GenerateResult> {
  // A retry that starts past the deadline sends nothing, so it is not billed for anything.
  if (input.deadline.at <= Date.now()) throw deadlineFailure(input.deadline);
  const events = new RunEvents(input.runId);
  const attempt = ctx.info.attempt;
  const deltaType = input.format.type === 'text' ? 'response.output_text.delta' : 'response.output_json.delta';
  const loaded = await untilAvailable(() => loadHistory(input), input.deadline.at);
  const model = input.config.model ?? 'default';
  const provider = providerOf(model);
  const prompt = await fitToWindow(
    input.config,
    input.contextTokens,
    loaded.history,
    (history) => assemblePrompt({ config: input.config, input: input.input, attachments: input.attachments, history, format: input.format, repair: input.repair, toolTurns: input.toolTurns, knowledge: input.knowledge, callerInstructions: input.exchange?.instructions }),
    (messages) => provider.countPromptTokens?.(messages, callSignal(input.deadline)) ?? Promise.resolve(undefined),
  );
  const messages = prompt.messages;
  const historyOmitted = loaded.omitted + prompt.omitted;
  if (input.stream && attempt > 1) await resetStreamedCall(events, input, attempt, messages, deltaType);
  let streamed = '';
  const deltas = new DeltaWindow((delta) => events.emit(deltaType, { id: input.runId, call: input.call, attempt, delta }));
  const notice = watchCancel(input.runId);
  const signal = AbortSignal.any([callSignal(input.deadline), notice.signal]);
  try {
    const routed = await routedComplete(ctx.metricMeter, { model, fallbacks: input.config.fallback_models }, {
      model,
      messages,
      temperature: input.config.temperature,
      maxOutputTokens: prompt.maxTokens,
      responseFormat: providerFormat(input.format),
      tools: input.tools,
      toolChoice: input.toolChoice,
      signal,
      traceId: input.traceId ?? '',
      attempt,
      ...(input.stream && {
        onTextDelta: (delta: string) => {
          streamed += delta;
          deltas.push(delta);
        },
      }),
    }, { deadlineAt: input.deadline.at, streamed: () => streamed !== '', share: async () => String(await runWorkspace(input.runId)) });
    const reply = routed.reply;
    // An aborted stream can end quietly rather than throw: a cut-short reply is never a result.
    if (signal.aborted) throw new CancelledFailure('model call cancelled');
    if (!reply.usage) ctx.metricMeter.createCounter('aes_model_usage_counted', 'calls', 'Model calls whose provider reported no usage: counted by the service, billed, and marked estimated in the run log.').add(1);
    return {
      text: reply.text,
      // Storable once, here: what an approver is shown, what is recorded and what is called are the same text.
      toolCalls: ownCallIds(reply.toolCalls.map((c) => ({ ...c, arguments: storableText(c.arguments) }))),
      usage: reply.usage ?? countedUsage(reply.model, messages, reply),
      ...(!reply.usage && { usageEstimated: true }),
      ...(historyOmitted > 0 && { historyOmitted }),
      ...(reply.truncated && { truncated: true }),
      model: routed.model,
      ...(routed.route && { route: routed.route }),
      // A refusal is an answer: nothing to validate or repair.
      ...(reply.refusal !== undefined ? { refusal: reply.refusal, check: { ok: true as const, value: null } } : { check: structuredCheck(reply.text, reply.truncated === true, input.format) }),
    };
  } catch (err) {
    if (signal.aborted) {
      if (!(err instanceof StoppedWaiting)) await recordConsumed(input.runId, messages, streamed);
      // Announced by the API before Temporal's cancel reaches the call: the provider is stopped, and
      // the call ends cancelled once that cancel comes with a heartbeat's answer (a cancel Temporal
      // never confirms fails the attempt, which is retried).
      if (notice.signal.aborted && !ctx.cancellationSignal.aborted) await confirmedCancel(ctx);
      if (!ctx.cancellationSignal.aborted) throw deadlineFailure(input.deadline);
      // Whatever the provider client threw on abort, the workflow must see a cancellation.
      throw err instanceof CancelledFailure ? err : new CancelledFailure('model call cancelled');
    }
    if (err instanceof ProviderError) {
      throw ApplicationFailure.create({ message: err.message, type: 'provider_unavailable', nonRetryable: !err.retryable });
    }
    throw err;
  } finally {
    // Before the call's outcome, so every delta precedes the events that follow it.
    deltas.close();
    notice.release();
    await events.flush();
  }
}

/** A structured reply cut off at the cap is not malformed but unfinished: its repair says so. */
function structuredCheck(text: string, truncated: boolean, format: ResponseFormat): StructuredCheck {
  const check = checkStructured(text, format);
  return !check.ok && truncated ? { ok: false, paths: ['$'], problems: [CUT_OFF_PROBLEM] } : check;
}

/**
 * Waits for Temporal's cancel of an announced-cancelled call. It comes with a heartbeat's answer once
 * the run's workflow has asked for it, a workflow task after the API's cancel: so the call asks at once,
 * then after CANCEL_CONFIRM_FIRST_MS and twice as long each time, for at most a heartbeat timeout.
 */
export async function confirmedCancel(ctx: Context): Promise<void> {
  let asking: NodeJS.Timeout | undefined;
  const ask = (nextMs: number) => {
    ctx.heartbeat();
    asking = setTimeout(() => ask(2 * nextMs), nextMs);
  };
  ask(CANCEL_CONFIRM_FIRST_MS);
  let giveUp: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (giveUp = setTimeout(resolve, MODEL_HEARTBEAT_TIMEOUT_MS)));
  try {
    await Promise.race([ctx.cancelled.catch(() => undefined), late]);
  } finally {
    clearTimeout(asking);
    clearTimeout(giveUp);
  }
  if (!ctx.cancellationSignal.aborted) throw ApplicationFailure.create({ message: 'the run was announced cancelled, but Temporal did not cancel the call', type: 'cancel_unconfirmed' });
}

/**
 * A retried attempt of a streamed call (its worker died, or the provider failed mid-answer): whatever
 * the earlier attempts streamed is void. The new attempt says so first, with an empty delta marked
 * `reset: true` (docs/api.md, "Streaming"), so a client drops that call's text and shows none of it twice;
 * and what the previous attempt consumed (it never reported usage) is estimated and billed once.
 */
async function resetStreamedCall(events: RunEvents, input: GenerateInput, attempt: number, messages: ChatMessage[], deltaType: StreamEventType): Promise<void> {
  const earlier = await events.streamedText(input.call);
  if (![...earlier.values()].some((text) => text !== '')) return;
  const previous = earlier.get(attempt - 1);
  if (previous) await recordConsumed(input.runId, messages, previous);
  events.emit(deltaType, { id: input.runId, call: input.call, attempt, reset: true, delta: '' });
}

/** A call cut short still cost what was sent and what came back: estimate it, since the provider never said. */
async function recordConsumed(runId: string, messages: ChatMessage[], streamed: string): Promise<void> {
  const input = messages.reduce((n, m) => n + estimateTokens(m.content ?? ''), 0);
  const output = estimateTokens(streamed);
  await addConsumedUsage(runId, { input_tokens: input, output_tokens: output, total_tokens: input + output, cached_tokens: 0 });
}
