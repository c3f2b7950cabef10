import { STREAM_EVENT_TYPES, STREAM_VERSION, type StreamEventType } from '../../domain/streamEvents';
import { closed, constant, integer, oneOfValues, publicId, ref, string, timestamp, type JsonSchema } from './jsonSchema';
import { ACTION_TYPES } from '../../domain/actionTypes';

const delta = closed(
  {
    id: publicId('run'),
    call: integer({ minimum: 1, description: 'Which model call of the run (tool rounds and the repair are later calls).' }),
    attempt: integer({ minimum: 1, description: 'Which try of that call.' }),
    reset: { type: 'boolean', const: true, description: 'On the first delta of a retried attempt: drop the text of this call streamed so far.' },
    delta: string(),
  },
  { optional: ['reset'] },
);
const tool = { id: publicId('run'), call_id: string(), tool: string() };

/** The `data` of each event (spec "Streaming events"; docs/api.md, "Streaming"). */
const DATA: Record<StreamEventType, { schema: JsonSchema; meaning: string }> = {
  'response.started': {
    meaning: 'Run begun; from here the HTTP status is 200. The run object without `output` and `usage`, plus `stream_version`.',
    schema: closed(
      {
        id: publicId('run'),
        status: ref('RunStatus'),
        agent: string(),
        agent_version: integer(),
        conversation: publicId('conversation'),
        metadata: { type: 'object' },
        request_id: publicId('request'),
        trace_id: string(),
        stream_version: constant(STREAM_VERSION),
      },
      { optional: ['conversation'] },
    ),
  },
  'response.output_text.delta': { meaning: 'A text chunk.', schema: delta },
  'response.output_json.delta': { meaning: 'A chunk of the raw JSON text of model call `call`; the validated value is in `response.completed`.', schema: delta },
  'response.tool.started': { meaning: 'A tool call begun.', schema: closed(tool) },
  'response.tool.completed': { meaning: 'A tool call finished.', schema: closed(tool) },
  'response.tool.failed': {
    meaning: 'A tool call failed (for a remote MCP tool, also its result with `isError`). Without `call_id`, under `tool_policy: auto`: an MCP server that could not be reached when the run started (`tool` is its `server_label`); its tools are not offered.',
    schema: closed({ ...tool, error: string() }, { optional: ['call_id'] }),
  },
  'response.tool.progress': {
    meaning: "Beyond the spec: a remote MCP tool's progress notification, as the server sends it.",
    schema: closed({ ...tool, progress: { type: 'number' }, total: { type: 'number' }, message: string() }, { optional: ['total', 'message'] }),
  },
  'response.tool.action_required': {
    meaning: 'The run waits for people (docs: "Actions"): an approval of the call, or the client tool\'s output, sent to `submit_to`. The stream stays open (keep-alives); its client going away no longer cancels the run, so it may come back with `Last-Event-ID`.',
    schema: closed(
      {
        ...tool,
        type: oneOfValues(ACTION_TYPES),
        arguments: string({ description: 'A client tool\'s arguments (JSON text), only for `client_tool`.' }),
        expires_at: timestamp(),
        submit_to: string({ description: 'Where to answer: POST this path.' }),
      },
      { optional: ['arguments'] },
    ),
  },
  'response.completed': { meaning: 'Terminal: the final run object.', schema: ref('RunResponse') },
  'response.failed': { meaning: 'Terminal: the error object of a JSON failure (`error`, and the run\'s `id`, `status`, `trace_id`).', schema: ref('Error') },
  'response.cancelled': { meaning: 'Terminal: the run object, `status` `cancelled`.', schema: ref('RunResponse') },
};

/** `response.output_text.delta` → `StreamEvent_response_output_text_delta`: dots are not valid in component names. */
export const streamEventSchemaName = (type: StreamEventType) => `StreamEvent_${type.replaceAll('.', '_')}`;
const dataSchemaName = (type: StreamEventType) => `StreamEventData_${type.replaceAll('.', '_')}`;

/** The terminal events carry the run or the error object as they are; the others' data have schemas of their own. */
const dataSchemaRef = (type: StreamEventType) => (DATA[type].schema.$ref ? DATA[type].schema : ref(dataSchemaName(type)));

/** One schema per event (one SSE frame each, its `data` line JSON text), one per event's data, and the stream they make up. */
export const streamSchemas: Record<string, JsonSchema> = {
  ...Object.fromEntries(STREAM_EVENT_TYPES.filter((type) => !DATA[type].schema.$ref).map((type) => [dataSchemaName(type), DATA[type].schema])),
  ...Object.fromEntries(
    STREAM_EVENT_TYPES.map((type) => [
      streamEventSchemaName(type),
      closed(
        {
          id: string({ description: 'The `id:` line: the position to resume after with Last-Event-ID. Absent on a terminal event the API derived from the run\'s outcome.' }),
          event: constant(type),
          data: { type: 'string', description: 'The `data:` line: JSON text.', contentMediaType: 'application/json', contentSchema: dataSchemaRef(type) },
        },
        { optional: ['id'], description: `\`event: ${type}\`. ${DATA[type].meaning}` },
      ),
    ]),
  ),
  ResponseStream: {
    description: [
      `\`text/event-stream\`, contract version \`${STREAM_VERSION}\` (header \`X-Stream-Version\`). Each event is one frame: an optional \`id:\` line, one \`event:\` line naming the type, one \`data:\` line of JSON text and a blank line. This schema is one event; the stream is a sequence of them.`,
      'Exactly one terminal event (`response.completed`, `response.failed`, `response.cancelled`) ends a stream; a stream that ends without one means "resume" with `GET /api/v2/runs/{run_id}/events` and `Last-Event-ID`. Lines starting with `:` are keep-alive comments (about every 15 seconds); skip them.',
    ].join('\n\n'),
    oneOf: STREAM_EVENT_TYPES.map((type) => ref(streamEventSchemaName(type))),
  },
};
