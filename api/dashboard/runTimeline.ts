import { WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { tsToDate } from '@temporalio/common/lib/time';
import type { temporal as proto } from '@temporalio/proto';
import { payloadCodec } from '../../infra/payloadCodec';
import { temporal } from '../../infra/temporalClient';
import type { Usage } from '../../domain/usage';
import type { IncompleteReason } from '../../domain/runResponse';
import type { LimitReason } from '../../domain/limits';
import type { RouteNote } from '../../activities/providers/router';

/**
 * A run's steps, read from its own workflow history: each activity the run scheduled (a model call,
 * a tool call, a retrieval) with when it was scheduled, started and ended, its attempts, how it
 * ended and, for a model call, the tokens it used; and when the run was accepted (its workflow
 * started), so how long it was queued until a worker took its first step. Only metadata: a step
 * says what it is by its summary, and of its payloads only a model call's usage is read. Undefined
 * when the history is no longer kept (the namespace's retention).
 */
export interface RunTimeline {
  acceptedAt: Date;
  steps: TimelineStep[];
}

export interface TimelineStep {
  /** `wait` and `fallback`: how a model call was routed (activities/providers/router.ts), each a step of its own after the call's. */
  kind: 'model_call' | 'tool_call' | 'retrieval' | 'step' | 'wait' | 'fallback';
  /** The activity's summary, as the Temporal UI shows it: `model call 2 (repair)`, `tool lookup_order`. */
  label: string;
  scheduledAt: Date;
  startedAt?: Date;
  endedAt?: Date;
  /** From its last attempt's start to its end. */
  latencyMs?: number;
  attempts: number;
  status: 'completed' | 'failed' | 'timed out' | 'cancelled' | 'running';
  /** A failure's type: the error code the run reports (tool_execution_failed, provider_unavailable…). */
  errorCode?: string;
  tokens?: { input: number; output: number };
  /** For a model call: the model that answered. */
  model?: string;
}

const PASSED: Record<string, (model: string) => string> = {
  cooldown: (model) => `${model} was cooling down`,
  circuit: (model) => `${model}'s circuit was open`,
};
const WAITED_FOR: Record<string, string> = { cooldown: 'its cooldown (Retry-After)', circuit: 'its open circuit', limit: 'a slot (max_concurrency, rpm)' };

/**
 * A model call's routing as steps of their own, after the call's: each wait for a provider (`waited
 * 2.1 s for provider a: its cooldown (Retry-After)`), and a fallback taken (`answered by b/stub-model
 * after a/stub-model failed: rate_limited`).
 */
export function routeSteps(call: TimelineStep, route: RouteNote | undefined): TimelineStep[] {
  const at = { scheduledAt: call.startedAt ?? call.scheduledAt, startedAt: call.startedAt, attempts: call.attempts, status: 'completed' as const };
  const waits = (route?.waits ?? []).map((w): TimelineStep => ({ ...at, kind: 'wait', label: `waited ${(w.ms / 1000).toFixed(1)} s for provider ${w.provider}: ${WAITED_FOR[w.why] ?? w.why}`, latencyMs: w.ms }));
  const passed = route?.passed ?? [];
  if (passed.length === 0) return waits;
  const why = passed.map((p) => PASSED[p.why]?.(p.model) ?? `${p.model} failed: ${p.why}`).join('; ');
  return [...waits, { ...at, kind: 'fallback', label: `answered by ${call.model} after ${why}` }];
}

/**
 * What ended a completed run that is unfinished, for its settled row: the limit it reached (no call
 * was made after it), or the output cap its answer stopped at. Read from the run's record.
 */
export function stoppedBy(reason: IncompleteReason | null | undefined): string | undefined {
  if (!reason) return undefined;
  if (reason === 'max_output_tokens') return "its answer stopped at the output cap (max_output_tokens)";
  return `it reached its limit ${reason} (${LIMIT_ENDS[reason]}): no call was made after it`;
}

const LIMIT_ENDS: Record<LimitReason, string> = {
  max_tool_calls: 'the model asked for more tool calls than it allows',
  max_model_calls: 'every model call it allows was made',
  max_run_credits: 'its credits were spent',
  max_output_tokens_total: 'its output tokens were spent',
};

const KINDS: Record<string, TimelineStep['kind']> = { startRun: 'model_call', generate: 'model_call', callTool: 'tool_call', callMcpTool: 'tool_call', retrieveKnowledge: 'retrieval' };

async function opened<T>(payload: Payload | null | undefined): Promise<T | undefined> {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload<T>((await payloadCodec.decode([payload]))[0]);
  } catch {
    // A payload sealed under a key no longer held: the step is shown without it.
    return undefined;
  }
}

const time = (e: proto.api.history.v1.IHistoryEvent) => tsToDate(e.eventTime!);

export async function runTimeline(runId: string): Promise<RunTimeline | undefined> {
  let events: proto.api.history.v1.IHistoryEvent[];
  try {
    events = (await (await temporal()).workflow.getHandle(runId).fetchHistory()).events ?? [];
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  if (events.length === 0) return undefined;
  const steps = new Map<string, TimelineStep>();
  /** The routing steps of a model call, by its scheduled event: they follow it. */
  const routed = new Map<string, TimelineStep[]>();
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name ?? '';
      steps.set(String(e.eventId), { kind: KINDS[type] ?? 'step', label: (await opened<string>(e.userMetadata?.summary)) ?? type, scheduledAt: time(e), attempts: 0, status: 'running' });
      continue;
    }
    const started = e.activityTaskStartedEventAttributes;
    const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
    const step = steps.get(String((started ?? ended)?.scheduledEventId ?? ''));
    if (!step) continue;
    if (started) {
      step.startedAt = time(e);
      step.attempts = started.attempt ?? 1;
      continue;
    }
    step.endedAt = time(e);
    if (step.startedAt) step.latencyMs = step.endedAt.getTime() - step.startedAt.getTime();
    if (e.activityTaskCompletedEventAttributes) {
      step.status = 'completed';
      if (step.kind === 'model_call') {
        const result = await opened<{ usage?: Usage; model?: string; route?: RouteNote }>(e.activityTaskCompletedEventAttributes.result?.payloads?.[0]);
        const usage = result?.usage;
        if (usage) step.tokens = { input: usage.input_tokens, output: usage.output_tokens };
        if (result?.model) step.model = result.model;
        routed.set(String(e.activityTaskCompletedEventAttributes.scheduledEventId), routeSteps(step, result?.route));
      }
    } else if (e.activityTaskFailedEventAttributes) {
      step.status = 'failed';
      const failure = e.activityTaskFailedEventAttributes.failure;
      step.errorCode = failure?.applicationFailureInfo?.type ?? failure?.cause?.applicationFailureInfo?.type ?? undefined;
    } else {
      step.status = e.activityTaskTimedOutEventAttributes ? 'timed out' : 'cancelled';
    }
  }
  return { acceptedAt: time(events[0]), steps: [...steps].flatMap(([id, step]) => [step, ...(routed.get(id) ?? [])]) };
}
