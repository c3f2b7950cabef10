import { CancelResponse, CreateChatCompletion, CreateResponseV1, RetrieveModel, RetrieveResponse } from '../../routes/v1/schema';
import { EXECUTION_ERRORS } from '../execution';
import { ChatCompletionShape, ModelShape, ResponseShape } from '../../openai/shapes';
import { closed, constant, ref, type JsonSchema } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const model = ref('Model');
const ACCESS = { credential: 'workspace', scopes: ['responses:create'] } as const;

/** The `/v1` surface (DESIGN.md): OpenAI's wire shapes over the same pipeline as /api/v2. */
export const v1: Resource = {
  schemas: { Model: ModelShape, ChatCompletion: ChatCompletionShape, Response: ResponseShape },
  paths: {
    '/v1/models': {
      get: operation('get', {
        id: 'listModels',
        summary: "List the workspace's agents as models",
        description: 'Active agents only, newest first, at most 1,000 (no pages).',
        tag: 'OpenAI-compatible',
        access: { credential: 'workspace', scopes: ['responses:create', 'agents:read'] },
        wire: 'openai',
        responses: { '200': json('The models.', closed({ object: constant('list'), data: { type: 'array', items: model } })) },
      }),
    },
    '/v1/models/{model}': {
      get: operation('get', {
        id: 'retrieveModel',
        summary: 'Read one agent as a model',
        description: 'By the agent id, or its name where the workspace has one agent of that name.',
        tag: 'OpenAI-compatible',
        access: { credential: 'workspace', scopes: ['responses:create', 'agents:read'] },
        wire: 'openai',
        request: RetrieveModel,
        responses: { '200': json('The model.', model) },
        errors: ['agent_not_found'],
      }),
    },
    '/v1/responses': {
      post: operation('post', {
        id: 'createResponseV1',
        summary: 'Run an agent as an OpenAI response',
        description:
          "The agent `model` names runs on `input` (a string, or input items: messages, function call outputs (at most 16 KiB each) and approval responses), with `instructions` after the agent's own. Stored (`store`, default true: the key needs `messages:create` as well, and `conversations:create` to open a new conversation) it is a turn of a conversation, which `previous_response_id` or `conversation` continues in order; `store: false` is a stateless run. Function call outputs, and `mcp_approval_response` items (`approval_request_id`, `approve`, with `previous_response_id` naming the response waiting), continue the run whose calls they answer. `background: true` answers at once, `queued`. `stream: true` answers the Responses API's events, each with a `sequence_number`.",
        tag: 'OpenAI-compatible',
        access: ACCESS,
        wire: 'openai',
        request: CreateResponseV1,
        responses: {
          '200': {
            description: 'The response; with `stream: true`, its events.',
            content: { 'application/json': { schema: ref('Response') }, 'text/event-stream': { schema: { type: 'string' } as JsonSchema } },
          },
        },
        errors: [...EXECUTION_ERRORS, 'conversation_not_found', 'conversation_busy', 'run_not_found', 'action_not_found', 'action_not_pending'],
      }),
    },
    '/v1/responses/{response_id}': {
      get: operation('get', {
        id: 'retrieveResponseV1',
        summary: 'Read a stored response',
        description: 'As it stands. With `stream=true`, its events from the start, or after `starting_after` (a sequence number), to its end.',
        tag: 'OpenAI-compatible',
        access: ACCESS,
        wire: 'openai',
        request: RetrieveResponse,
        responses: {
          '200': { description: 'The response, or its events.', content: { 'application/json': { schema: ref('Response') }, 'text/event-stream': { schema: { type: 'string' } as JsonSchema } } },
        },
        errors: ['run_not_found'],
      }),
    },
    '/v1/responses/{response_id}/cancel': {
      post: operation('post', {
        id: 'cancelResponseV1',
        summary: 'Cancel a response',
        description: "Cancels the response's run (a finished one is answered as it ended).",
        tag: 'OpenAI-compatible',
        access: ACCESS,
        wire: 'openai',
        request: CancelResponse,
        responses: { '200': json('The response as it stands.', ref('Response')) },
        errors: ['run_not_found'],
      }),
    },
    '/v1/chat/completions': {
      post: operation('post', {
        id: 'createChatCompletion',
        summary: 'Run an agent as an OpenAI chat completion',
        description:
          "A stateless run of the agent `model` names, through the same pipeline as POST /api/v2/responses. `messages` carry the exchange: the last (a user message) is the input, the earlier ones its history, and system or developer messages follow the agent's own instructions. A `tool` message is at most 16 KiB. A run that waits for an approver holds the request until the decision, within the run's bound; past it, 409 `action_required` names the run. Fields the service decides are refused with a 400 naming them, except the values that mean unset (docs/api.md, \"The OpenAI-compatible surface\"). Failures are in OpenAI's shape with our code.",
        tag: 'OpenAI-compatible',
        access: ACCESS,
        wire: 'openai',
        request: CreateChatCompletion,
        responses: {
          '200': {
            description: 'The completion; with `stream: true`, `chat.completion.chunk` events and `data: [DONE]`.',
            content: { 'application/json': { schema: ref('ChatCompletion') }, 'text/event-stream': { schema: { type: 'string' } as JsonSchema } },
          },
        },
        errors: [...EXECUTION_ERRORS, 'action_required', 'action_not_found', 'action_not_pending', 'run_not_found'],
      }),
    },
  },
};
