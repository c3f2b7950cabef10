import { STREAM_VERSION } from '../../domain/streamEvents';
import type { ErrorCode } from '../../domain/errors';
import { anyObject, closed, constant, integer, oneOfValues, publicId, ref, string, timestamp, type JsonSchema } from './jsonSchema';
import { ACTION_TYPES } from '../../domain/actions';
import { json, LOCATION } from './operation';

export const executionSchemas: Record<string, JsonSchema> = {
  Usage: closed({ input_tokens: integer({ minimum: 0 }), output_tokens: integer({ minimum: 0 }), total_tokens: integer({ minimum: 0 }), cached_tokens: integer({ minimum: 0 }) }),
  OutputItem: {
    oneOf: [
      closed({ type: constant('text'), text: string() }),
      closed({ type: constant('json'), json: { description: 'Any JSON value: the validated structured output.' }, text: string() }, { required: ['type', 'json'] }),
      closed({ type: constant('handoff'), text: string(), reason: string() }, { required: ['type', 'text'] }),
      closed({ type: constant('refusal'), refusal: string({ description: "The model's explanation of why it declined to answer." }) }, { description: 'The model declined: an answer like any other, never repaired and never a 422.' }),
    ],
  },
  RunResponse: closed(
    {
      id: publicId('run'),
      status: ref('RunStatus'),
      agent: string({ description: 'The agent that ran.' }),
      agent_version: integer({ description: 'Version of the agent that ran.' }),
      conversation: publicId('conversation', 'Omitted by the stateless POST /api/v2/responses.'),
      output: { type: 'array', items: ref('OutputItem') },
      usage: ref('Usage'),
      metadata: anyObject('Free-form, as sent.'),
      request_id: publicId('request'),
      trace_id: string({ pattern: '^[0-9a-f]{32}$', description: 'W3C trace id.' }),
      required_action: ref('RequiredAction'),
      incomplete_details: closed(
        { reason: constant('max_output_tokens') },
        { description: 'Beyond the spec: only on a completed run whose answer stopped at its output cap (the agent\'s `max_output_tokens`, or the model\'s window), so the answer is unfinished. OpenAI\'s shape; /v1 says `finish_reason: length` and `status: incomplete`.' },
      ),
    },
    { optional: ['conversation', 'required_action', 'incomplete_details'], description: 'The run response object.' },
  ),
  RequiredCall: closed(
    {
      call_id: string({ description: 'The model\'s id for the call: name it in the answer.' }),
      type: oneOfValues(ACTION_TYPES, '`approval`: answer with a `decision`; `client_tool`: run the tool and answer with its `output`.'),
      tool: string({ description: 'The tool\'s name.' }),
      arguments: string({ description: 'The call\'s arguments, JSON text as the model wrote them: what an approval approves, what a client tool runs. Absent from agent.run.action_required (read the run).' }),
      arguments_sha256: string({ description: 'The SHA-256 (hex) of `arguments`: approving names it, so a decision approves exactly the arguments it was shown. Absent for calls recorded before it existed.' }),
      expires_at: timestamp('When the call is denied if no answer has come (the agent\'s `action_timeout_seconds`).'),
    },
    { optional: ['arguments', 'arguments_sha256'], description: 'A tool call the run waits on.' },
  ),
  RequiredAction: closed(
    { calls: { type: 'array', items: ref('RequiredCall'), minItems: 1 }, submit_to: string({ description: 'Where to answer: POST this path.' }) },
    { description: 'Present while a `running` run waits for people (docs: "Actions"): the calls it waits on. Absent otherwise.' },
  ),
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
