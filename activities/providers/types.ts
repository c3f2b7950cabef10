import type { Usage } from '../../domain/usage';

import type { ToolCall, ToolSpec } from '../../domain/tools';

export type { ToolCall, ToolSpec };

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxOutputTokens?: number;
  tools?: ToolSpec[];
  toolChoice?: 'auto' | 'required';
  /** Structured output: the caller's schema for the provider to enforce (json_schema), or any JSON object. */
  responseFormat?: ProviderFormat;
  signal?: AbortSignal;
  /** The run's trace id, continued by the provider request's `traceparent`. */
  traceId: string;
  /** The activity's attempt (1 first): the call's span marks a retry. */
  attempt?: number;
  /** When given, the reply is streamed and each text chunk is handed over as it arrives. */
  onTextDelta?: (chunk: string) => void;
}

export type ProviderFormat = { type: 'json_object' } | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict: boolean };

export interface ModelReply {
  text: string;
  toolCalls: ToolCall[];
  /** As the provider counted it; undefined when it reported none (the caller counts the tokens itself). */
  usage: Usage | undefined;
  /** The model declined to answer (OpenAI's `message.refusal`): its explanation, instead of an answer. */
  refusal?: string;
  /** The reply stopped at the call's max_tokens (`finish_reason: "length"`), not where the model ended it. */
  truncated?: boolean;
  model: string;
}

/**
 * What kind of failure a provider's is, which decides what the service does next
 * (activities/providers/router.ts): `rate_limited` (429), `server` (5xx), `timeout` and `connection`
 * go to a fallback model and count against the provider; `client` (a 4xx: the request is wrong) and
 * `other` do neither.
 */
export type ProviderErrorClass = 'rate_limited' | 'server' | 'timeout' | 'connection' | 'client' | 'other';

/** A provider failure; `retryable` says whether another attempt may succeed (5xx, 429, network). */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /** Undefined for errors made before failures had a class: treated as `other`. */
    readonly errorClass?: ProviderErrorClass,
    /** The provider's Retry-After (or retry-after-ms), in milliseconds, when it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface ModelProvider {
  readonly name: 'local' | 'openai';
  complete(request: ModelRequest): Promise<ModelReply>;
  /** The prompt's size in the model's own tokens, where the provider's server can count it (llama.cpp's); else undefined. */
  countPromptTokens?(messages: ChatMessage[], signal: AbortSignal): Promise<number | undefined>;
}
