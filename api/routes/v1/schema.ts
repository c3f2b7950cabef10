import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { refined } from '../../../contract/parse';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { about } from '../../../contract/about';
import { plainObject } from '../../../contract/runtimeInput';
import { MAX_LIMIT_VALUE } from '../../../domain/limits';

/**
 * OpenAI request fields the service decides itself, as /api/v2 forbids them (docs/api.md, "The
 * OpenAI-compatible surface"), each refused with a 400 naming it. `accepts`: the values that mean
 * "not set" (OpenAI's defaults), which an SDK may send on its own: taken as not sent. `null` always is.
 */
export const DECIDED_BY_THE_SERVICE: Readonly<Record<string, { reason: string; accepts?: readonly unknown[] }>> = {
  temperature: { reason: 'sampling is decided by the agent configuration', accepts: [1] },
  top_p: { reason: 'sampling is decided by the agent configuration', accepts: [1] },
  n: { reason: 'a run gives one answer', accepts: [1] },
  presence_penalty: { reason: 'sampling is decided by the agent configuration', accepts: [0] },
  frequency_penalty: { reason: 'sampling is decided by the agent configuration', accepts: [0] },
  logit_bias: { reason: 'sampling is decided by the agent configuration' },
  logprobs: { reason: 'log probabilities are not returned', accepts: [false] },
  top_logprobs: { reason: 'log probabilities are not returned', accepts: [0] },
  seed: { reason: 'sampling is decided by the agent configuration' },
  stop: { reason: 'sampling is decided by the agent configuration' },
  reasoning_effort: { reason: 'the model is decided by the agent configuration' },
  reasoning: { reason: 'the model is decided by the agent configuration' },
  verbosity: { reason: 'the model is decided by the agent configuration' },
  service_tier: { reason: 'routing is decided by the service', accepts: ['auto', 'default'] },
  modalities: { reason: 'runs answer text', accepts: [['text']] },
  audio: { reason: 'runs answer text' },
  prediction: { reason: 'the model is decided by the agent configuration' },
  web_search_options: { reason: 'tools are decided by the agent configuration' },
  functions: { reason: 'tools are decided by the agent configuration' },
  function_call: { reason: 'tools are decided by the agent configuration' },
  truncation: { reason: "the history is fitted to the model's window by the service", accepts: ['disabled'] },
  prompt: { reason: 'prompt assembly is decided by the agent configuration' },
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Refuses a field the service decides, unless it is null or a value that means "not set". */
export function refuseDecided(body: Record<string, unknown>): void {
  for (const [name, rule] of Object.entries(DECIDED_BY_THE_SERVICE)) {
    const value = body[name];
    if (value === undefined || value === null || rule.accepts?.some((ok) => same(ok, value))) continue;
    throw invalidRequest(`"${name}" may not be set: ${rule.reason}.`, name);
  }
}

/**
 * A caller's limit (docs/api.md, "Budgets and limits"): a positive integer (or null: not set) that
 * may only lower the agent's own; a higher one is the agent's.
 */
const lowering = (name: string, what: string, min = 1) =>
  yup
    .number()
    .typeError(`${name} must be an integer of at least ${min}`)
    .integer(`${name} must be an integer of at least ${min}`)
    .min(min, `${name} must be an integer of at least ${min}`)
    .max(MAX_LIMIT_VALUE, `${name} must be at most ${MAX_LIMIT_VALUE}`)
    .nullable()
    .meta(about(`${what}: it may only lower the agent's own limit (a higher value is the agent's). An answer it cuts is incomplete.`));

const textPart = yup.object({ type: yup.string().oneOf(['text', 'input_text', 'output_text']).required(), text: yup.string() });

/** A message's content: a string, null, or OpenAI's content parts (only text ones are taken). */
const content = yup
  .mixed<string | { type: string; text?: string }[]>()
  .nullable()
  .test('content', '${path} must be a string, null or an array of content parts', (v) => v === undefined || v === null || typeof v === 'string' || (Array.isArray(v) && v.every((p) => textPart.isValidSync(p))))
  .meta({ jsonSchema: { oneOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: { type: 'object', properties: { type: { enum: ['text', 'input_text', 'output_text'] }, text: { type: 'string' } }, required: ['type'] } }] } });

const toolCall = yup.object({
  id: yup.string().required(),
  type: yup.string().oneOf(['function']),
  function: yup.object({ name: yup.string().required(), arguments: yup.string().required() }).required(),
});

const chatMessage = yup.object({
  role: yup.string().oneOf(['system', 'developer', 'user', 'assistant', 'tool'] as const).required(),
  content,
  name: yup.string().max(200),
  tool_calls: yup.array(toolCall).max(32),
  tool_call_id: yup.string().max(200),
  refusal: yup.string().nullable(),
});

export type ChatMessageIn = yup.InferType<typeof chatMessage>;

const functionTool = yup.object({
  type: yup.string().oneOf(['function']).required(),
  function: yup.object({ name: yup.string().required(), description: yup.string(), parameters: plainObject(), strict: yup.boolean().nullable() }).required(),
});

const toolChoice = yup
  .mixed()
  .test('tool_choice', 'tool_choice may only be "auto": tools are decided by the agent configuration', (v) => v === undefined || v === null || v === 'auto')
  .meta({ jsonSchema: { enum: ['auto', null], description: 'Only `auto`: tools are decided by the agent configuration.' } });

const chatCompletionBody = yup.object({
  model: yup.string().required('model is required: an agent id (agt_…) or its name').max(200).meta(about("The agent to run: its id, or its name where no other agent of the workspace has it.")),
  messages: yup.array(chatMessage).required('messages is required').min(1, 'messages must not be empty').max(1000),
  stream: yup.boolean().nullable(),
  stream_options: yup.object({ include_usage: yup.boolean() }).nullable().default(undefined),
  response_format: yup
    .object({
      type: yup.string().oneOf(['text', 'json_object', 'json_schema'] as const).required(),
      json_schema: yup.object({ name: yup.string().max(64), description: yup.string(), schema: plainObject(), strict: yup.boolean().nullable() }).default(undefined),
    })
    .nullable()
    .default(undefined),
  tools: yup.array(functionTool).max(128).meta(about("Only the agent's own client-run tools, by name: the caller runs them and answers with `tool` messages.")),
  tool_choice: toolChoice,
  parallel_tool_calls: yup.boolean().nullable(),
  store: yup.boolean().nullable(),
  metadata: plainObject().nullable(),
  user: yup.string().min(1).max(200).meta(about('The end user: the principal rate limit applies to it.')),
  max_completion_tokens: lowering('max_completion_tokens', "The output tokens of the answer, each model call's and the run's in all"),
  max_tokens: lowering('max_tokens', 'As max_completion_tokens (the older name); with both, the lower'),
});

export type ChatCompletionBody = yup.InferType<typeof chatCompletionBody>;

/** An OpenAI body, with the fields the service decides refused by name; idempotent by Idempotency-Key. */
function openAiRequest<T extends object>(body: yup.Schema<T>) {
  return {
    body: refined(body, (value: T) => {
      refuseDecided(value as Record<string, unknown>);
      return value;
    }),
    headers: IDEMPOTENCY_HEADERS,
  };
}

/** POST /v1/chat/completions. */
export const CreateChatCompletion = openAiRequest(chatCompletionBody);

const inputItem = yup.object({
  type: yup.string().oneOf(['message', 'function_call', 'function_call_output', 'mcp_approval_response'] as const),
  role: yup.string().oneOf(['system', 'developer', 'user', 'assistant'] as const),
  content,
  call_id: yup.string().max(200),
  name: yup.string().max(200),
  arguments: yup.string(),
  output: yup.string(),
  // An mcp_approval_response: the decision on an mcp_approval_request of the response it continues.
  approval_request_id: yup.string().max(400),
  approve: yup.boolean(),
  reason: yup.string().max(1000).nullable(),
});

const responseBody = yup.object({
  model: yup.string().required('model is required: an agent id (agt_…) or its name').max(200).meta(about('The agent to run: its id, or its name where no other agent of the workspace has it.')),
  input: yup
    .mixed<string | yup.InferType<typeof inputItem>[]>()
    .required('input is required')
    .test('input', 'input must be a non-empty string or an array of input items', (v) => (typeof v === 'string' && v.length > 0) || (Array.isArray(v) && v.length > 0 && v.length <= 1000 && v.every((item) => inputItem.isValidSync(item))))
    .meta({ jsonSchema: { oneOf: [{ type: 'string', minLength: 1 }, { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object' } }] } }),
  instructions: yup.string().nullable().meta(about("The caller's instructions: a system message after the agent's own, which come first.")),
  text: yup
    .object({
      format: yup
        .object({ type: yup.string().oneOf(['text', 'json_object', 'json_schema'] as const).required(), name: yup.string().max(64), schema: plainObject(), strict: yup.boolean().nullable(), description: yup.string() })
        .default(undefined),
    })
    .nullable()
    .default(undefined),
  previous_response_id: yup.string().nullable().max(200).meta(about('Continue the conversation of this stored response: the turn is its next message, in order.')),
  conversation: yup
    .mixed<string | { id: string }>()
    .nullable()
    .test('conversation', 'conversation must be a conversation id or {"id": …}', (v) => v === undefined || v === null || typeof v === 'string' || (typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string'))
    .meta({ jsonSchema: { oneOf: [{ type: 'string' }, { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, { type: 'null' }] } }),
  store: yup.boolean().nullable().meta(about('Default true: the response is a turn of a conversation, readable afterwards (needs `messages:create` too). `false`: a stateless run.')),
  stream: yup.boolean().nullable(),
  background: yup.boolean().nullable().meta(about('Answer at once with the response `queued`; poll GET /v1/responses/{id}, or follow its stream.')),
  include: yup.array(yup.string()).max(0, 'include is not supported: the response carries what it has').nullable(),
  tools: yup
    .array(yup.object({ type: yup.string().oneOf(['function']).required(), name: yup.string().required(), description: yup.string().nullable(), parameters: plainObject().nullable(), strict: yup.boolean().nullable() }))
    .max(128)
    .nullable()
    .meta(about("Only the agent's own client-run tools, by name: the caller runs them and answers with `function_call_output` items.")),
  tool_choice: toolChoice,
  parallel_tool_calls: yup.boolean().nullable(),
  metadata: plainObject().nullable(),
  user: yup.string().min(1).max(200),
  max_output_tokens: lowering('max_output_tokens', "The output tokens of the response, each model call's and the run's in all"),
  max_tool_calls: lowering('max_tool_calls', 'The tool calls the run may make, every call of a reply counted', 0),
});

export type ResponseBody = yup.InferType<typeof responseBody>;

/** POST /v1/responses. */
export const CreateResponseV1 = openAiRequest(responseBody);

const responseId = yup.object({ response_id: yup.string().required().max(200) });

/** GET /v1/responses/{response_id}: the response; with `stream=true` its events, after `starting_after`. */
export const RetrieveResponse = {
  params: responseId,
  query: yup.object({
    stream: yup.string().oneOf(['true', 'false']),
    starting_after: yup.string().matches(/^\d{1,9}$/, 'starting_after must be a sequence number'),
  }),
};

export const CancelResponse = { params: responseId };

/** GET /v1/models/{model}. */
export const RetrieveModel = { params: yup.object({ model: yup.string().required().max(200) }) };
