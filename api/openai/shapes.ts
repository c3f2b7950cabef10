import { Type } from '@sinclair/typebox';
import { INCOMPLETE_REASONS } from '../../domain/runResponse';
import { anyValue, closed, constant, freeObject, integer, list, oneOfValues, optional, orNull, publicId, text, type Static } from '../../domain/shape';

/**
 * The `/v1` surface's answers in OpenAI's wire shapes, declared once (domain/shape.ts): the view
 * functions beside them (models.ts, chatCompletions.ts, responses.ts) return these shapes' static
 * types, and the OpenAPI document shows these schemas (api/openapi/paths/v1.ts).
 */

export const ModelShape = closed(
  {
    id: text("The agent's id: what `model` names."),
    object: constant('model'),
    created: integer({ description: 'Unix seconds: when the agent was created.' }),
    owned_by: text("The workspace's id."),
    name: text("The agent's name, which `model` may name too where it is the workspace's only agent of that name."),
  },
  'An active agent of the workspace, as an OpenAI model.',
);
export type ModelObject = Static<typeof ModelShape>;

const FunctionCall = closed({ id: text(), type: constant('function'), function: closed({ name: text(), arguments: text() }) });

export const ChatCompletionShape = closed(
  {
    id: text('The run id (`run_…`): GET /api/v2/runs/{id} reads the same run.'),
    object: constant('chat.completion'),
    created: integer(),
    model: text('As the request named the agent.'),
    choices: list(
      closed({
        index: integer(),
        message: closed({
          role: constant('assistant'),
          content: orNull(text('The answer; a structured one as JSON text.')),
          refusal: orNull(text("The model's explanation when it declined to answer.")),
          tool_calls: optional(list(FunctionCall, { description: "The agent's client-run tools the caller is to run (finish_reason `tool_calls`)." })),
        }),
        logprobs: Type.Null(),
        finish_reason: oneOfValues(['stop', 'length', 'tool_calls'] as const, '`length`: the answer stopped at its output cap or the run at one of its limits, unfinished.'),
      }),
    ),
    usage: closed({ prompt_tokens: integer(), completion_tokens: integer(), total_tokens: integer(), prompt_tokens_details: closed({ cached_tokens: integer() }) }),
    system_fingerprint: Type.Null(),
  },
  "A run as OpenAI's chat.completion.",
);
export type ChatCompletionObject = Static<typeof ChatCompletionShape>;

export const ResponseShape = closed(
  {
    id: text('The run id (`run_…`).'),
    object: constant('response'),
    created_at: integer(),
    status: oneOfValues(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'] as const),
    model: text(),
    output: list(Type.Unsafe<object>({ type: 'object' }), { description: 'One assistant message, or the calls the run waits on: `function_call` items, `mcp_approval_request` items.' }),
    output_text: text(),
    usage: closed({
      input_tokens: integer(),
      input_tokens_details: closed({ cached_tokens: integer() }),
      output_tokens: integer(),
      output_tokens_details: closed({ reasoning_tokens: integer() }),
      total_tokens: integer(),
    }),
    error: orNull(closed({ code: text(), message: text() })),
    incomplete_details: orNull(closed({ reason: oneOfValues(INCOMPLETE_REASONS) })),
    instructions: Type.Null(),
    metadata: freeObject('As sent with the run.'),
    previous_response_id: orNull(text()),
    conversation: optional(closed({ id: publicId('conversation') })),
    store: Type.Boolean(),
    background: Type.Boolean(),
    parallel_tool_calls: Type.Boolean(),
    tool_choice: constant('auto'),
    tools: list(anyValue('None: the agent\'s own tools are not listed.'), { maxItems: 0 }),
  },
  "A run as OpenAI's response object: `id` is the run's, `status` from the run's (`queued`, `in_progress`, `completed`, `failed`, `cancelled`; `incomplete` when the answer stopped at its output cap or the run at one of its limits, with `incomplete_details`; `in_progress` while it waits for an approver), `output` one assistant message, or the calls it waits on: the function calls of the agent's client-run tools, and an `mcp_approval_request` item (`id`, `name`, `arguments`, `server_label`) for each call that waits for an approver, HTTP and MCP tools alike. `usage` with cached tokens.",
);
export type ResponseObject = Static<typeof ResponseShape>;
