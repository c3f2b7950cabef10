import { performance } from 'node:perf_hooks';
import { SpanKind, type Attributes } from '@opentelemetry/api';
import { AES, GENAI, OPERATION, PROVIDER, spanName } from '../../domain/genaiSpans';
import { contentCaptured } from '../../infra/genaiContent';
import { failureType, inSpan } from '../../infra/tracing';
import { recordChatMetrics } from './genaiMetrics';
import { ProviderError, type ChatMessage, type ModelReply } from './types';

/** What a model call asks, as its span and metrics tell it. */
export interface ChatAsked {
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  stream: boolean;
  /** The activity's attempt (1 first); `resent`: the same attempt's second request (json_object after a refused schema). */
  attempt?: number;
  resent: boolean;
  server?: URL;
}

/** What the provider's answer says beyond the reply: told by the provider code as it reads it. */
export class ChatCall {
  id?: string;
  finishReasons: string[] = [];
  private readonly startedAt = performance.now();
  firstChunkSeconds?: number;

  /** A streamed chunk arrived (only the first counts). */
  chunk(): void {
    this.firstChunkSeconds ??= (performance.now() - this.startedAt) / 1000;
  }

  seconds(): number {
    return (performance.now() - this.startedAt) / 1000;
  }
}

/**
 * One request to a model as a `chat {model}` span of the GenAI conventions (a client span, the
 * active one while the request is sent, so the provider's `traceparent` names it) and the
 * gen_ai.client.* metrics. A retried call is a span of its own, its attempt and `aes.model_call.retry`
 * saying so. Content (messages, system instructions, the answer) only as infra/genaiContent.ts allows.
 */
export function tracedChat(asked: ChatAsked, work: (call: ChatCall) => Promise<ModelReply>): Promise<ModelReply> {
  const retry = asked.resent || (asked.attempt ?? 1) > 1;
  const attributes: Attributes = {
    [GENAI.operation]: OPERATION.chat,
    [GENAI.provider]: PROVIDER,
    [GENAI.requestModel]: asked.model,
    [GENAI.requestStream]: asked.stream,
    ...(asked.maxTokens !== undefined && { [GENAI.requestMaxTokens]: asked.maxTokens }),
    ...(asked.temperature !== undefined && { [GENAI.requestTemperature]: asked.temperature }),
    ...(asked.server && { [GENAI.serverAddress]: asked.server.hostname, ...(asked.server.port && { [GENAI.serverPort]: Number(asked.server.port) }) }),
    ...(asked.attempt !== undefined && { [AES.callAttempt]: asked.attempt }),
    [AES.retry]: retry,
    ...(contentCaptured() && inputContent(asked.messages)),
  };
  const call = new ChatCall();
  const labels = { provider: PROVIDER, requestModel: asked.model };
  return inSpan(spanName(OPERATION.chat, asked.model), { kind: SpanKind.CLIENT, attributes }, async (span) => {
    let reply: ModelReply;
    try {
      reply = await work(call);
    } catch (err) {
      recordChatMetrics({ ...labels, errorType: errorTypeOf(err) }, { seconds: call.seconds(), firstChunkSeconds: call.firstChunkSeconds });
      throw err;
    }
    const usage = reply.usage;
    span.setAttributes({
      [GENAI.responseModel]: reply.model,
      ...(call.id && { [GENAI.responseId]: call.id }),
      ...(call.finishReasons.length > 0 && { [GENAI.finishReasons]: call.finishReasons }),
      ...(usage && { [GENAI.inputTokens]: usage.input_tokens, [GENAI.outputTokens]: usage.output_tokens, [GENAI.cacheReadInputTokens]: usage.cached_tokens }),
      ...(call.firstChunkSeconds !== undefined && { [GENAI.timeToFirstChunk]: call.firstChunkSeconds }),
      ...(contentCaptured() && { [GENAI.outputMessages]: JSON.stringify([outputMessage(reply, call.finishReasons[0])]) }),
    });
    recordChatMetrics({ ...labels, responseModel: reply.model }, { seconds: call.seconds(), firstChunkSeconds: call.firstChunkSeconds, inputTokens: usage?.input_tokens, outputTokens: usage?.output_tokens });
    return reply;
  }, errorTypeOf);
}

/** `error.type` as the conventions have it: the HTTP status a provider answered, else the failure's class. */
function errorTypeOf(err: unknown): string {
  if (err instanceof ProviderError) return err.status ? String(err.status) : (err.errorClass ?? 'other');
  const status = (err as { status?: unknown })?.status;
  return typeof status === 'number' ? String(status) : failureType(err);
}

/** The conventions' message shapes: system instructions apart, each message a role and its parts. */
function inputContent(messages: ChatMessage[]): Attributes {
  const system = messages.filter((m) => m.role === 'system').map((m) => ({ type: 'text', content: m.content }));
  const input = messages.filter((m) => m.role !== 'system').map((m) => {
    if (m.role === 'tool') return { role: 'tool', parts: [{ type: 'tool_call_response', id: m.tool_call_id, response: m.content }] };
    if (m.role === 'assistant') return { role: 'assistant', parts: [...(m.content ? [{ type: 'text', content: m.content }] : []), ...(m.tool_calls ?? []).map(toolCallPart)] };
    return { role: m.role, parts: [{ type: 'text', content: m.content }] };
  });
  return { ...(system.length > 0 && { [GENAI.systemInstructions]: JSON.stringify(system) }), [GENAI.inputMessages]: JSON.stringify(input) };
}

function outputMessage(reply: ModelReply, finishReason: string | undefined): Record<string, unknown> {
  const parts = [...(reply.text ? [{ type: 'text', content: reply.text }] : []), ...(reply.refusal ? [{ type: 'text', content: reply.refusal }] : []), ...reply.toolCalls.map(toolCallPart)];
  return { role: 'assistant', parts, finish_reason: finishReason ?? (reply.toolCalls.length > 0 ? 'tool_call' : 'stop') };
}

function toolCallPart(c: { id: string; name: string; arguments: string }): Record<string, unknown> {
  return { type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments };
}
