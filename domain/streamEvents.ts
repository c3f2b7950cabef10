import { errorBody } from './errors';
import type { RunOutcome } from './runs';

/** The streaming event contract (spec: "Streaming events"), versioned on its own. */
export const STREAM_VERSION = '2026-09-07';

export const STREAM_EVENT_TYPES = [
  'response.started',
  'response.output_text.delta',
  'response.output_json.delta',
  'response.tool.started',
  'response.tool.completed',
  'response.tool.failed',
  // Beyond the spec: a remote MCP tool's progress notifications, as they come.
  'response.tool.progress',
  'response.tool.action_required',
  'response.completed',
  'response.failed',
  'response.cancelled',
] as const;

export type StreamEventType = (typeof STREAM_EVENT_TYPES)[number];

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.failed', 'response.cancelled']);

/** The Redis stream that carries one run's events from the worker to whichever API holds the client. */
export function runEventsKey(runId: string): string {
  return `run:${runId}:events`;
}

/**
 * The Redis channel on which a run's workers tell the API instances that hold its request or its
 * stream what happened: its outcome once committed (heard before the run's workflow has closed), that
 * it waits for people, and that its stream moved. (The name predates the last two; it stays, so that
 * workers and APIs of two releases still hear each other during a deploy.)
 */
export function runChannel(runId: string): string {
  return `run:${runId}:settled`;
}

/**
 * Published on a run's channel, as is (not JSON), with each entry appended to its stream: the API
 * relaying the stream reads it at once (runs/runStreamReader.ts).
 */
export const STREAM_MOVED = 'moved';

/** Published on a run's channel when it begins to wait for people: not an outcome, the run goes on. */
export const WAITING = { action_required: true } as const;

/**
 * The Redis channel on which the API announces that it cancelled a run, so that the worker holding
 * the run's model call aborts it at once instead of at the heartbeat that carries Temporal's cancel.
 */
export function runCancelChannel(runId: string): string {
  return `run:${runId}:cancel`;
}

/** Every run's cancel channel, as one pattern: cancels are rare, so each worker hears them all. */
export const RUN_CANCEL_PATTERN = 'run:*:cancel';

/** Streams are capped (entries) and expire (seconds), so abandoned runs cost nothing for long. */
export const RUN_EVENTS_MAX_LEN = 10_000;
export const RUN_EVENTS_TTL_S = 24 * 60 * 60;

/** One SSE frame: an optional id line, one event line, one data line of JSON, and a blank line. */
export function sseFrame(type: string, data: string, id?: string): string {
  return `${id ? `id: ${id}\n` : ''}event: ${type}\ndata: ${data}\n\n`;
}

/**
 * The one terminal event of a run, from its outcome: the settled run writes it, and the API derives
 * the same event from the workflow's result when the stream lost it.
 */
export function terminalEvent(outcome: RunOutcome): { type: StreamEventType; data: unknown } {
  const { run, error } = outcome;
  if (error) {
    return { type: 'response.failed', data: errorBody(error, run.request_id, run) };
  }
  if (run.status === 'cancelled') return { type: 'response.cancelled', data: run };
  return { type: 'response.completed', data: run };
}
