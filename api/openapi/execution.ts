import { CHANNELS, FORBIDDEN_OPTIONS, RESERVED_CONTEXT_KEYS } from '../validation/runtimeInput';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../middleware/idempotent';
import { STREAM_VERSION } from '../../domain/streamEvents';
import type { ErrorCode } from '../../domain/errors';
import { anyObject, boolean, closed, constant, integer, oneOfValues, publicId, ref, string, type JsonSchema } from './jsonSchema';
import { json, LOCATION } from './operation';

/** Mirrors api/validation/runtimeInput.ts: the runtime input and options of the three execution endpoints (and of runs.batch job items). */

const FORMAT_TYPES = ['text', 'json_object', 'json_schema'];

const options: Record<string, JsonSchema> = {
  knowledge_policy: oneOfValues(['auto', 'none', 'required'], 'Default `auto`. Can only restrict retrieval relative to the agent\'s configuration.'),
  memory_policy: oneOfValues(['auto', 'none'], 'Default `auto`.'),
  tool_policy: oneOfValues(['auto', 'none', 'required'], 'Default `auto`.'),
  preview: boolean({ description: 'Run the unpublished configuration; needs scope `agent:preview` (without it: 404). Default false.' }),
  stream: boolean({ description: 'Answer as Server-Sent Events. Default false.' }),
  timeout_ms: integer({ minimum: 1000, maximum: 120000, description: 'Default 60000. Out of range is refused, not clamped.' }),
  response_format: ref('ResponseFormat'),
};

const responseFormatObject = {
  ...closed(
    {
      type: oneOfValues(FORMAT_TYPES),
      name: string({ maxLength: 64 }),
      schema: anyObject('A JSON Schema with an object root; checked (bounds, ajv strict mode, RE2 patterns) before authorization. Required when type is `json_schema`.'),
      strict: { type: 'boolean', const: true, description: 'Only `true` is accepted (the default).' },
    },
    { required: ['type'] },
  ),
  if: { properties: { type: { const: 'json_schema' } } },
  then: { required: ['schema'] },
};

/** The runtime input: the body of the execution endpoints (and the items of a runs.batch job). */
const RUNTIME_INPUT: JsonSchema = {
  type: 'object',
  description: `The runtime input. Runtime options may be sent flat or under \`options\` (the nested value wins). Caller-forbidden keys are refused with a 400 naming them: ${Object.keys(FORBIDDEN_OPTIONS).map((k) => `\`${k}\``).join(', ')}. Other unknown top-level keys are ignored.`,
  required: ['input'],
  properties: {
    agent: string({ minLength: 1, maxLength: 200 }),
    input: { oneOf: [string({ minLength: 1 }), anyObject('A structured payload: it reaches the model inside the user message, fenced and labelled.')] },
    attachments: { type: 'array', maxItems: 32, items: ref('Attachment') },
    channel: oneOfValues(CHANNELS, 'Empty string: not stated (falls through to the conversation\'s own channel).'),
    locale: string({ maxLength: 35 }),
    metadata: anyObject('Free-form.'),
    request_context: ref('RequestContext'),
    external_ref: string({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$', description: 'Printable, no newlines; resolving the same value twice returns the same conversation.' }),
    options: ref('RuntimeOptions'),
    ...options,
  },
  propertyNames: { not: { enum: Object.keys(FORBIDDEN_OPTIONS) } },
};

export const executionSchemas: Record<string, JsonSchema> = {
  ResponseFormat: {
    description: 'A type name, or an object. With `json_schema` the reply is validated (and repaired at most once) against `schema` and returned as a `json` output item.',
    oneOf: [oneOfValues(FORMAT_TYPES), responseFormatObject],
  },
  RuntimeOptions: closed(options, { optional: Object.keys(options), description: 'An unrecognised key is a 400.' }),
  Attachment: closed(
    {
      ref: string({ minLength: 1, maxLength: 512, description: 'A reference to something already stored, never bytes.' }),
      mime_type: string({ maxLength: 128 }),
      name: string({ maxLength: 255 }),
      type: oneOfValues(['file', 'image', 'audio', 'video', 'document']),
    },
    { required: ['ref'] },
  ),
  RequestContext: {
    type: 'object',
    description: `Caller context. Only \`resource_id\` is acted on: it narrows the run to that document (\`doc_…\`) or collection (\`col_…\`); one the caller cannot reach is 403 \`invalid_context\`. Reserved keys are refused by name, in any letter case: ${[...RESERVED_CONTEXT_KEYS].map((k) => `\`${k}\``).join(', ')}.`,
    properties: { resource_id: string() },
    propertyNames: { not: { enum: [...RESERVED_CONTEXT_KEYS] } },
  },
  Usage: closed({ input_tokens: integer({ minimum: 0 }), output_tokens: integer({ minimum: 0 }), total_tokens: integer({ minimum: 0 }), cached_tokens: integer({ minimum: 0 }) }),
  OutputItem: {
    oneOf: [
      closed({ type: constant('text'), text: string() }),
      closed({ type: constant('json'), json: { description: 'Any JSON value: the validated structured output.' }, text: string() }, { required: ['type', 'json'] }),
      closed({ type: constant('handoff'), text: string(), reason: string() }, { required: ['type', 'text'] }),
      closed({ type: constant('refusal'), refusal: string({ description: "The model's explanation of why it declined to answer." }) }, { description: 'The model declined: an answer like any other, never repaired and never a 422.' }),
    ],
  },
  RuntimeInput: RUNTIME_INPUT,
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
    },
    { optional: ['conversation'], description: 'The run response object.' },
  ),
};

/** The body of an execution endpoint; `agent` is required by /responses, taken from the URL or the conversation elsewhere. */
export function runtimeInput(agent: 'required' | 'optional', description: string): JsonSchema {
  return agent === 'required' ? { description, allOf: [ref('RuntimeInput'), { required: ['agent'] }] } : { ...ref('RuntimeInput'), description };
}

export const IDEMPOTENCY_KEY = { name: 'Idempotency-Key', in: 'header', required: false, schema: string({ maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }), description: 'Same key and body: the stored answer replays byte for byte for 24 hours. Same key, different body: 409 `idempotency_conflict`.' };

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
