import { STREAM_VERSION } from '../../domain/streamEvents';
import { OutputItemShape, RequiredActionShape, RequiredCallShape, RunResponseShape, UsageShape } from '../../domain/runResponse';
import type { ErrorCode } from '../../domain/errors';
import { ref, type JsonSchema } from './jsonSchema';
import { json, LOCATION } from './operation';

/** The run response object and its parts, as declared once beside the types they give (domain/runResponse.ts). */
export const executionSchemas: Record<string, JsonSchema> = {
  Usage: UsageShape,
  OutputItem: OutputItemShape,
  RunResponse: RunResponseShape,
  RequiredCall: RequiredCallShape,
  RequiredAction: RequiredActionShape,
};

/** The replay marker, spelled per endpoint (spec "Idempotency" 4). */
export function replayMarker(name: 'Idempotency-Replayed' | 'Idempotent-Replay'): Record<string, JsonSchema> {
  return { [name]: { description: 'Present (`true`) when this answer replays an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } } };
}

/** Failures a run can end with, beyond admission: resolution, billing, context, and the run's own failure. */
export const EXECUTION_ERRORS: ErrorCode[] = [
  'agent_not_found',
  'agent_not_available',
  'idempotency_conflict',
  'usage_blocked',
  'invalid_context',
  'structured_output_failed',
  'provider_unavailable',
  'tool_execution_failed',
  'knowledge_unavailable',
];

/** The answers of an execution endpoint: the run (or its event stream), or 202 with the run as it stands. */
export function executionResponses(): Record<string, JsonSchema> {
  const marker = replayMarker('Idempotency-Replayed');
  return {
    '200': {
      description: 'The run, settled (`completed`, or `cancelled` while the caller waited); or, with `stream`, its events.',
      headers: { ...marker, 'X-Stream-Version': { description: `With \`stream\`: the stream contract version, \`${STREAM_VERSION}\`.`, schema: { type: 'string' } } },
      content: { 'application/json': { schema: ref('RunResponse') }, 'text/event-stream': { schema: ref('ResponseStream') } },
    },
    '202': json('The run did not settle within `timeout_ms` plus a grace: the run as it stands (`queued` or `running`); poll `Location`. Not stored for idempotency.', ref('RunResponse'), { ...LOCATION, ...marker }),
  };
}
