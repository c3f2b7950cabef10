/**
 * The names of OpenTelemetry's GenAI semantic conventions (semantic-conventions 1.45: `gen_ai.*`,
 * `mcp.*`) the service's spans and metrics use, declared once. Written out rather than imported from
 * `@opentelemetry/semantic-conventions/incubating`: the installed release (1.28) predates most of
 * them, and the workflow bundle, which names the agent's span, would carry all 800 kB of the newer
 * one. Pure: the workflow sandbox imports it.
 */
export const GENAI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
  agentVersion: 'gen_ai.agent.version',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  requestStream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  dataSource: 'gen_ai.data_source.id',
  retrievalQuery: 'gen_ai.retrieval.query.text',
  tokenType: 'gen_ai.token.type',
  mcpMethod: 'mcp.method.name',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
} as const;

/** `gen_ai.operation.name` values; a span is named `{operation} {subject}` (the agent's name, the model, the tool). */
export const OPERATION = { agent: 'invoke_agent', chat: 'chat', tool: 'execute_tool', retrieval: 'retrieval' } as const;

/** The service's own attributes beside the conventions' (no convention says these). */
export const AES = {
  /** The model call's attempt as Temporal counts it (1 first), or the same attempt's second request. */
  callAttempt: 'aes.model_call.attempt',
  retry: 'aes.model_call.retry',
  /** An MCP tool's server, by the label the agent's config gives it. */
  mcpServerLabel: 'aes.mcp.server_label',
  retrievedChunks: 'aes.retrieval.chunks',
  runId: 'aes.run.id',
} as const;

/** The metrics (gen_ai.client.*), in Prometheus's naming, as the worker's endpoint serves them. */
export const GENAI_METRICS = {
  tokenUsage: 'gen_ai_client_token_usage',
  duration: 'gen_ai_client_operation_duration',
  timeToFirstChunk: 'gen_ai_client_operation_time_to_first_chunk',
} as const;

/**
 * The Temporal header the activities of an agent run whose exchange is kept carry (put there by
 * workflows/genaiInterceptors.ts): only their spans may hold its content (infra/genaiContent.ts). A
 * stateless run's activities, and any without it, never do.
 */
export const CONTENT_HEADER = 'aes-genai-content';

/** `gen_ai.provider.name`: every model is called through OpenAI's Chat Completions API, which the conventions name `openai` whatever the server. */
export const PROVIDER = 'openai';

/** The span's name: the operation, then what it acts on where there is one. */
export function spanName(operation: string, subject: string | undefined): string {
  return subject ? `${operation} ${subject}` : operation;
}
