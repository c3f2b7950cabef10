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
  /** Ask the provider for a JSON object (json_object and json_schema formats). */
  json?: boolean;
  signal?: AbortSignal;
  /** The run's trace id, continued by the provider request's `traceparent`. */
  traceId: string;
  /** When given, the reply is streamed and each text chunk is handed over as it arrives. */
  onTextDelta?: (chunk: string) => void;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  model: string;
}

/** A provider failure; `retryable` says whether another attempt may succeed (5xx, 429, network). */
export class ProviderError extends Error {
  constructor(message: string, readonly retryable: boolean, readonly status?: number) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface ModelProvider {
  readonly name: 'local' | 'openai';
  complete(request: ModelRequest): Promise<ModelReply>;
}
