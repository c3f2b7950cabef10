import OpenAI from 'openai';
import type { ChatCompletionCreateParams, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ZERO_USAGE, type Usage } from '../../domain/usage';
import { traceHeaders } from '../../infra/tracing';
import { ProviderError, type ChatMessage, type ModelProvider, type ModelReply, type ModelRequest, type ToolCall } from './types';

function usageOf(raw: OpenAI.CompletionUsage | null | undefined): Usage {
  if (!raw) return { ...ZERO_USAGE };
  return {
    input_tokens: raw.prompt_tokens ?? 0,
    output_tokens: raw.completion_tokens ?? 0,
    total_tokens: raw.total_tokens ?? (raw.prompt_tokens ?? 0) + (raw.completion_tokens ?? 0),
    cached_tokens: raw.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

function toProviderError(err: unknown): Error {
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIConnectionError) return new ProviderError(`provider unreachable: ${err.message}`, true);
  if (err instanceof OpenAI.APIError) {
    const status = err.status ?? 0;
    const retryable = status >= 500 || status === 429 || status === 408 || status === 409 || status === 0;
    return new ProviderError(`provider answered ${status || 'an error'}`, retryable, status || undefined);
  }
  return new ProviderError(`provider call failed: ${(err as Error)?.message ?? String(err)}`, true);
}

/** Tool calls travel in the Chat Completions wire shape. */
function toWire(message: ChatMessage): ChatCompletionMessageParam {
  if (message.role !== 'assistant' || !message.tool_calls?.length) return message as ChatCompletionMessageParam;
  return {
    role: 'assistant',
    content: message.content,
    tool_calls: message.tool_calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
  };
}

/**
 * Any OpenAI-compatible Chat Completions endpoint through the official client. Retries belong to
 * Temporal, so the client never retries on its own. Each request carries the calling activity's
 * `traceparent`, so a provider that traces sees the run's trace id.
 */
export class OpenAIProvider implements ModelProvider {
  readonly name = 'openai' as const;
  private readonly client: OpenAI;

  constructor(options: { baseURL?: string; apiKey: string }) {
    this.client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey, maxRetries: 0 });
  }

  async complete(request: ModelRequest): Promise<ModelReply> {
    const params: ChatCompletionCreateParams = {
      model: request.model,
      messages: request.messages.map(toWire),
      ...(request.temperature !== undefined && { temperature: request.temperature }),
      ...(request.maxOutputTokens !== undefined && { max_tokens: request.maxOutputTokens }),
      ...(request.json && { response_format: { type: 'json_object' as const } }),
      ...(request.tools?.length && {
        tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
        tool_choice: request.toolChoice ?? 'auto',
      }),
    };
    try {
      return request.onTextDelta ? await this.streamed(params, request) : await this.whole(params, request);
    } catch (err) {
      throw toProviderError(err);
    }
  }

  private async whole(params: ChatCompletionCreateParams, request: ModelRequest): Promise<ModelReply> {
    const completion = await this.client.chat.completions.create({ ...params, stream: false }, { signal: request.signal, headers: traceHeaders(request.traceId) });
    const message = completion.choices[0]?.message;
    const toolCalls: ToolCall[] = (message?.tool_calls ?? []).flatMap((c) =>
      c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
    );
    return { text: message?.content ?? '', toolCalls, usage: usageOf(completion.usage), model: completion.model || params.model };
  }

  private async streamed(params: ChatCompletionCreateParams, request: ModelRequest): Promise<ModelReply> {
    const stream = await this.client.chat.completions.create(
      { ...params, stream: true, stream_options: { include_usage: true } },
      { signal: request.signal, headers: traceHeaders(request.traceId) },
    );
    let text = '';
    let model = params.model;
    let usage: Usage = { ...ZERO_USAGE };
    const calls = new Map<number, ToolCall>();
    for await (const chunk of stream) {
      if (chunk.model) model = chunk.model;
      if (chunk.usage) usage = usageOf(chunk.usage);
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        request.onTextDelta?.(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        const call = calls.get(part.index) ?? { id: '', name: '', arguments: '' };
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) call.arguments += part.function.arguments;
        calls.set(part.index, call);
      }
    }
    return { text, toolCalls: [...calls.values()], usage, model };
  }
}
