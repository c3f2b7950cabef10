import { LRUCache } from 'lru-cache';
import OpenAI from 'openai';
import type { ChatCompletionCreateParams, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Usage } from '../../domain/usage';
import { logger } from '../../infra/logger';
import { traceHeaders } from '../../infra/tracing';
import { tracedChat, type ChatCall } from './chatSpan';
import { ProviderError, type ChatMessage, type ProviderErrorClass, type ModelProvider, type ModelReply, type ModelRequest, type ProviderFormat, type ToolCall } from './types';

/** How structured output is asked for: `auto` sends the schema and falls back to json_object where a provider refuses it. */
export type StructuredOutputMode = 'auto' | 'json_schema' | 'json_object';

function usageOf(raw: OpenAI.CompletionUsage | null | undefined): Usage | undefined {
  if (!raw) return undefined;
  return {
    input_tokens: raw.prompt_tokens ?? 0,
    output_tokens: raw.completion_tokens ?? 0,
    total_tokens: raw.total_tokens ?? (raw.prompt_tokens ?? 0) + (raw.completion_tokens ?? 0),
    cached_tokens: raw.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/** Retry-After in milliseconds: OpenAI's `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function errorClass(status: number): ProviderErrorClass {
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status >= 500 || status === 0) return 'server';
  return status >= 400 && status < 500 && status !== 409 ? 'client' : 'other';
}

function toProviderError(err: unknown): Error {
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIConnectionTimeoutError) return new ProviderError(`provider timed out: ${err.message}`, true, undefined, 'timeout');
  if (err instanceof OpenAI.APIConnectionError) return new ProviderError(`provider unreachable: ${err.message}`, true, undefined, 'connection');
  if (err instanceof OpenAI.APIError) {
    const status = err.status ?? 0;
    const retryable = status >= 500 || status === 429 || status === 408 || status === 409 || status === 0;
    // The provider's own pacing: kept so every worker waits it out (activities/providers/health.ts).
    return new ProviderError(`provider answered ${status || 'an error'}`, retryable, status || undefined, errorClass(status), retryAfterMs(err.headers));
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

/** A 400 about the response format: this provider or model does not take a schema (json_schema). */
function refusesSchema(err: unknown): boolean {
  return err instanceof OpenAI.APIError && err.status === 400 && /response_format|json_schema/i.test(err.message);
}

/**
 * Any OpenAI-compatible Chat Completions endpoint through the official client. Retries belong to
 * Temporal, so the client never retries on its own. Each request carries the calling activity's
 * `traceparent`, so a provider that traces sees the run's trace id. A structured request sends the
 * caller's schema for the provider to enforce (OpenAI, vLLM, llama.cpp and Ollama do); a model that
 * answers such a request with a 400 about the response format is asked again at once with json_object,
 * and remembered, so the next call to it asks that way first (one refused request per model and process).
 */
export class OpenAIProvider implements ModelProvider {
  readonly name = 'openai' as const;
  private readonly client: OpenAI;
  private readonly mode: StructuredOutputMode;
  /** Models that refused json_schema. */
  private readonly schemaRefused = new LRUCache<string, true>({ max: 1000 });
  /** Whether the server counts prompts (llama.cpp's /apply-template and /tokenize): unknown until it is first asked. */
  private counts: boolean | undefined;
  /** The server, as each call's span names it. */
  private readonly server: URL | undefined;

  constructor(private readonly options: { baseURL?: string; apiKey: string; structuredOutput?: StructuredOutputMode; jsonObjectGrammar?: string }) {
    this.client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey, maxRetries: 0 });
    this.mode = options.structuredOutput ?? 'auto';
    this.server = URL.canParse(options.baseURL ?? '') ? new URL(options.baseURL!) : undefined;
  }

  /**
   * The prompt's tokens by the server's own chat template and tokenizer, where it is llama.cpp's (the
   * embedded model): a prompt is fitted to its window exactly. Other servers answer 404 once, and are
   * not asked again; a failure to ask is no count, never a failed call.
   */
  async countPromptTokens(messages: ChatMessage[], signal: AbortSignal): Promise<number | undefined> {
    if (this.counts === false || !this.options.baseURL) return undefined;
    const origin = this.options.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
    const ask = async (path: string, body: unknown): Promise<Record<string, unknown> | undefined> => {
      const res = await fetch(origin + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.apiKey}` }, body: JSON.stringify(body), signal });
      if (res.status === 404) this.counts = false;
      return res.ok ? ((await res.json()) as Record<string, unknown>) : undefined;
    };
    try {
      const templated = await ask('/apply-template', { messages: messages.map(toWire) });
      if (typeof templated?.prompt !== 'string') return undefined;
      const tokenized = await ask('/tokenize', { content: templated.prompt, add_special: true, parse_special: true });
      if (!Array.isArray(tokenized?.tokens)) return undefined;
      this.counts = true;
      return tokenized.tokens.length;
    } catch {
      return undefined;
    }
  }

  async complete(request: ModelRequest): Promise<ModelReply> {
    const asked = request.responseFormat;
    const schemaFirst = asked?.type === 'json_schema' && (this.mode === 'json_schema' || (this.mode === 'auto' && !this.schemaRefused.has(request.model)));
    try {
      return await this.send(request, schemaFirst ? asked : asked && { type: 'json_object' });
    } catch (err) {
      if (!(schemaFirst && this.mode === 'auto' && refusesSchema(err))) throw toProviderError(err);
      this.schemaRefused.set(request.model, true);
      logger.warn({ model: request.model, err: (err as Error).message }, 'the provider refused a json_schema response format: this model is asked for json_object from now on');
      try {
        return await this.send(request, { type: 'json_object' }, true);
      } catch (again) {
        throw toProviderError(again);
      }
    }
  }

  /** One request, a span of its own (activities/providers/chatSpan.ts); `resent`: this attempt's second. */
  private send(request: ModelRequest, format: ProviderFormat | undefined, resent = false): Promise<ModelReply> {
    const params: ChatCompletionCreateParams = {
      model: request.model,
      messages: request.messages.map(toWire),
      ...(request.temperature !== undefined && { temperature: request.temperature }),
      ...(request.maxOutputTokens !== undefined && { max_tokens: request.maxOutputTokens }),
      ...(format && this.formatParams(format)),
      ...(request.tools?.length && {
        tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
        tool_choice: request.toolChoice ?? 'auto',
      }),
    };
    const asked = { model: request.model, messages: request.messages, maxTokens: request.maxOutputTokens, temperature: request.temperature, stream: !!request.onTextDelta, attempt: request.attempt, resent, server: this.server };
    return tracedChat(asked, (call) => (request.onTextDelta ? this.streamed(params, request, call) : this.whole(params, request, call)));
  }

  /**
   * The request's fields for a structured reply. Where the operator names a grammar (a llama.cpp server,
   * MODEL_JSON_OBJECT_GRAMMAR), json_object is asked as llama.cpp's own `grammar` field: a grammar that
   * bounds the object, which a small model cannot loop inside until its cap (workers/jsonObject.gbnf).
   */
  private formatParams(format: ProviderFormat): Partial<ChatCompletionCreateParams> {
    if (format.type === 'json_schema') return { response_format: { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict } } };
    // Not in the client's types: the client sends the body's fields as they are.
    if (this.options.jsonObjectGrammar) return { grammar: this.options.jsonObjectGrammar } as Partial<ChatCompletionCreateParams>;
    return { response_format: { type: 'json_object' } };
  }

  private async whole(params: ChatCompletionCreateParams, request: ModelRequest, call: ChatCall): Promise<ModelReply> {
    const completion = await this.client.chat.completions.create({ ...params, stream: false }, { signal: request.signal, headers: traceHeaders(request.traceId) });
    call.id = completion.id;
    call.finishReasons = completion.choices.flatMap((c) => (c.finish_reason ? [c.finish_reason] : []));
    const message = completion.choices[0]?.message;
    const toolCalls: ToolCall[] = (message?.tool_calls ?? []).flatMap((c) =>
      c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
    );
    return {
      text: message?.content ?? '',
      toolCalls,
      usage: usageOf(completion.usage),
      ...(message?.refusal && { refusal: message.refusal }),
      ...(completion.choices[0]?.finish_reason === 'length' && { truncated: true }),
      model: completion.model || params.model,
    };
  }

  private async streamed(params: ChatCompletionCreateParams, request: ModelRequest, call: ChatCall): Promise<ModelReply> {
    const stream = await this.client.chat.completions.create(
      { ...params, stream: true, stream_options: { include_usage: true } },
      { signal: request.signal, headers: traceHeaders(request.traceId) },
    );
    let text = '';
    let refusal = '';
    let model = params.model;
    let usage: Usage | undefined;
    let truncated = false;
    const calls = new Map<number, ToolCall>();
    for await (const chunk of stream) {
      call.chunk();
      if (chunk.id) call.id = chunk.id;
      const finish = chunk.choices[0]?.finish_reason;
      if (finish) call.finishReasons = [finish];
      if (chunk.model) model = chunk.model;
      if (finish === 'length') truncated = true;
      if (chunk.usage) usage = usageOf(chunk.usage);
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        request.onTextDelta?.(delta.content);
      }
      // A refusal is never streamed as text: it reaches the client as an output item of the completed run.
      if (delta?.refusal) refusal += delta.refusal;
      for (const part of delta?.tool_calls ?? []) {
        const call = calls.get(part.index) ?? { id: '', name: '', arguments: '' };
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) call.arguments += part.function.arguments;
        calls.set(part.index, call);
      }
    }
    return { text, toolCalls: [...calls.values()], usage, ...(refusal && { refusal }), ...(truncated && { truncated }), model };
  }
}
