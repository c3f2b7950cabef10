import { invalidRequest, ServiceError } from '../../domain/errors';
import { MAX_ACTION_OUTPUT_CHARS } from '../../domain/actions';
import { hasPrefix, mintedAtSeconds } from '../../domain/ids';
import type { CallerExchange, OutputItem, ResponseFormat, RunOptions, RunResponse } from '../../domain/runs';
import type { ToolCall } from '../../domain/tools';
import { parseResponseFormat, type ExecutionRequest } from '../../contract/runtimeInput';
import type { StreamWire } from '../../runs/runEventRelay';
import { openAiErrorBody } from './errors';
import type { ChatCompletionBody, ChatMessageIn } from '../routes/v1/schema';
import type { ChatCompletionObject } from './shapes';

/** The longest a /v1 run may take: its callers cannot say (the spec's bound; the SDKs wait 10 minutes). */
export const V1_TIMEOUT_MS = 120_000;

/** A message's text: a string, or OpenAI's content parts, of which only text ones are taken. */
export function textOf(content: ChatMessageIn['content'], where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, i) => {
      if (part.type === 'text' || part.type === 'input_text' || part.type === 'output_text') return String(part.text ?? '');
      throw invalidRequest(`${where}.content[${i}] is a ${String(part.type)} part: only text parts are taken.`, `${where}.content`);
    })
    .join('');
}

/**
 * OpenAI's response_format, as the spec's: `json_schema`'s `strict` may be anything, the reply is
 * always checked against the schema.
 */
export function responseFormatOf(format: ChatCompletionBody['response_format'] | undefined): ResponseFormat {
  if (!format || format.type === 'text') return { type: 'text' };
  if (format.type === 'json_object') return { type: 'json_object' };
  const schema = format.json_schema;
  if (!schema?.schema) throw invalidRequest('response_format.json_schema.schema is required when type is json_schema.', 'response_format');
  return parseResponseFormat({ type: 'json_schema', ...(schema.name && { name: schema.name }), schema: schema.schema });
}

/**
 * The messages as the run's parts: the last user message is the input; the earlier ones (system and
 * developer ones as the caller's instructions, after the agent's) are its history. Stateless, as
 * OpenAI's API: nothing of the exchange is kept between requests.
 */
export function exchangeOf(messages: ChatMessageIn[]): { input: string; exchange: CallerExchange & { history: NonNullable<CallerExchange['history']> } } {
  const last = messages.length - 1;
  if (messages[last].role !== 'user') throw invalidRequest(`messages[${last}] must be a user message: the agent answers the last one.`, 'messages');
  const instructions: string[] = [];
  const history: NonNullable<CallerExchange['history']> = [];
  messages.slice(0, last).forEach((m, i) => {
    const where = `messages[${i}]`;
    if (m.role === 'system' || m.role === 'developer') instructions.push(textOf(m.content, where));
    else if (m.role === 'user') history.push({ role: 'user', content: textOf(m.content, where) });
    else if (m.role === 'tool') history.push({ role: 'tool', content: cappedToolOutput(textOf(m.content, where), where, 'messages'), tool_call_id: m.tool_call_id ?? '' });
    else if (m.tool_calls?.length) history.push({ role: 'assistant', content: textOf(m.content, where) || null, tool_calls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) });
    else history.push({ role: 'assistant', content: textOf(m.content, where) || (m.refusal ?? '') });
  });
  const input = textOf(messages[last].content, `messages[${last}]`);
  if (!input) throw invalidRequest(`messages[${last}] has no text.`, 'messages');
  return { input, exchange: { ...(instructions.length > 0 && { instructions: instructions.join('\n\n') }), history } };
}

/** A chat completion's run options: stateless, its stream and format; the service's own for the rest. */
export function chatOptions(body: ChatCompletionBody): RunOptions {
  return { knowledgePolicy: 'auto', memoryPolicy: 'none', toolPolicy: 'auto', preview: false, stream: body.stream === true, timeoutMs: V1_TIMEOUT_MS, responseFormat: responseFormatOf(body.response_format) };
}

/** A chat completion request as the pipeline's execution request (the agent is named by `model`). */
export function chatExecutionRequest(body: ChatCompletionBody): ExecutionRequest {
  const { input, exchange } = exchangeOf(body.messages);
  return {
    externalRef: body.user,
    input,
    attachments: [],
    channel: 'api',
    metadata: body.metadata ?? {},
    requestContext: {},
    exchange,
    options: chatOptions(body),
    ...outputLimit(body),
  };
}

/** max_completion_tokens and max_tokens lower the agent's output limits (the lower of the two when both are sent). */
function outputLimit(body: ChatCompletionBody): Pick<ExecutionRequest, 'callerLimits'> {
  const given = [body.max_completion_tokens, body.max_tokens].filter((n): n is number => typeof n === 'number');
  return given.length > 0 ? { callerLimits: { max_output_tokens: Math.min(...given) } } : {};
}

/** The run's answer as the assistant message's content and refusal. */
function messageOf(output: OutputItem[]): { content: string | null; refusal: string | null } {
  const refusal = output.find((item) => item.type === 'refusal');
  if (refusal?.type === 'refusal') return { content: null, refusal: refusal.refusal };
  const text = output.map((item) => (item.type === 'json' ? JSON.stringify(item.json) : item.type === 'refusal' ? '' : item.text)).join('\n');
  return { content: text, refusal: null };
}

function usageOf(run: RunResponse) {
  return {
    prompt_tokens: run.usage.input_tokens,
    completion_tokens: run.usage.output_tokens,
    total_tokens: run.usage.total_tokens,
    prompt_tokens_details: { cached_tokens: run.usage.cached_tokens },
  };
}


/**
 * The tool calls a run waits on its caller to run (the agent's client-run tools), as OpenAI's. Each
 * id names the run too (`run_….call_…`), so the request that answers them continues that run.
 */
export function toolCallsOf(run: RunResponse): ToolCall[] {
  return (run.required_action?.calls ?? []).flatMap((c) => (c.type === 'client_tool' ? [{ id: `${run.id}.${c.call_id}`, name: c.tool, arguments: c.arguments ?? '{}' }] : []));
}

/**
 * A tool's output sent back (a `tool` message, a `function_call_output` item), capped as /api/v2
 * caps a client tool's: it goes to the model as an HTTP tool's answer does.
 */
export function cappedToolOutput(output: string, where: string, param: string): string {
  if (output.length > MAX_ACTION_OUTPUT_CHARS) throw invalidRequest(`${where}: a tool's output is at most ${MAX_ACTION_OUTPUT_CHARS} characters (16 KiB), as on /api/v2; this one has ${output.length}.`, param);
  return output;
}

/** A client-run tool's output for the call `callId` names (`run_….call_…`, as toolCallsOf gave it out). */
export function toolOutputOf(callId: string, output: string, where: { item: string; idField: string }, param: string): { runId: string; answer: { call_id: string; output: string } } {
  const [runId, call] = callId.split('.', 2);
  if (!call || !hasPrefix('run', runId)) throw invalidRequest(`${where.item}.${where.idField} must name a tool call this service gave out.`, param);
  return { runId, answer: { call_id: call, output: cappedToolOutput(output, where.item, param) } };
}

/** The one run that answers name (a request answers the calls of one response at a time). */
export function oneRun(answers: { runId: string }[], param: string): string {
  const runId = answers[0].runId;
  if (answers.some((a) => a.runId !== runId)) throw invalidRequest('The answers are for calls of different responses: answer one at a time.', param);
  return runId;
}

/**
 * The outputs a request brings for a run's client-run tool calls: the tool messages that end it, each
 * naming a call the service gave out. Undefined when the request does not end with them (a new run).
 */
export function toolOutputsOf(messages: ChatMessageIn[]): { runId: string; outputs: { call_id: string; output: string }[] } | undefined {
  let first = messages.length;
  while (first > 0 && messages[first - 1].role === 'tool') first--;
  if (first === messages.length) return undefined;
  const outputs = messages.slice(first).map((m, i) => toolOutputOf(m.tool_call_id ?? '', textOf(m.content, `messages[${first + i}]`), { item: `messages[${first + i}]`, idField: 'tool_call_id' }, 'messages'));
  return { runId: oneRun(outputs, 'messages'), outputs: outputs.map((o) => o.answer) };
}

/**
 * A run still waiting for an approver when the request's wait ends: a chat completion has no shape
 * for it and must not look like an answer, so it is an error naming the run and where to go on. Not
 * retried by the SDKs (`x-should-retry`): a retry would wait on the same approver.
 */
export function waitingForApprover(run: RunResponse): ServiceError {
  const calls = (run.required_action?.calls ?? []).filter((c) => c.type === 'approval').map((c) => `${c.tool} (${c.call_id})`);
  return new ServiceError(
    'action_required',
    `Run ${run.id} waits for an approver's decision on ${calls.join(', ')}, not given within this request's wait. Decide at POST /api/v2/runs/${run.id}/actions; its answer is then at GET /api/v2/runs/${run.id}.`,
    { 'x-should-retry': 'false' },
  );
}

/** A run as OpenAI's chat.completion object; `model` as the caller named the agent, the id the run's. */
export function chatCompletion(run: RunResponse, model: string): ChatCompletionObject {
  const calls = toolCallsOf(run);
  const message = messageOf(run.output);
  return {
    id: run.id,
    object: 'chat.completion',
    created: mintedAtSeconds(run.id),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', ...message, ...(calls.length > 0 && { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }) },
        logprobs: null,
        finish_reason: finishReason(run, calls),
      },
    ],
    usage: usageOf(run),
    system_fingerprint: null,
  };
}

/** Why the answer ended: calls for its caller to run, its output cap (the answer unfinished), or its own end. */
function finishReason(run: RunResponse, calls: unknown[]): 'tool_calls' | 'length' | 'stop' {
  if (calls.length > 0) return 'tool_calls';
  return run.incomplete_details ? 'length' : 'stop';
}

/**
 * A run's events as OpenAI's chat.completion.chunk stream: the role first, then each text delta; a
 * structured answer is sent whole from the completed run (a repair's deltas would repeat it); the end
 * is a chunk with its finish_reason, the usage when asked for (stream_options.include_usage), and
 * `[DONE]`; a run that waits on its caller's tools ends so too, with the calls. A failure is an
 * `error` event in OpenAI's shape, which the SDKs raise.
 */
export function chatChunks(runId: () => string, model: string, includeUsage: boolean, structured: boolean): StreamWire {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => data({ id: runId(), object: 'chat.completion.chunk', created: mintedAtSeconds(runId()), model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  // The role comes first, also on a continued run's stream (which has no response.started of its own).
  let started = false;
  const start = () => {
    if (started) return '';
    started = true;
    return chunk({ role: 'assistant', content: '' });
  };
  const end = (run: RunResponse) => {
    const calls = toolCallsOf(run);
    const { content, refusal } = messageOf(run.output);
    const body = [
      start(),
      ...(structured && content ? [chunk({ content })] : []),
      ...(refusal ? [chunk({ refusal })] : []),
      ...(calls.length > 0 ? [chunk({ tool_calls: calls.map((c, index) => ({ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) })] : []),
      chunk({}, finishReason(run, calls)),
      ...(includeUsage ? [data({ id: runId(), object: 'chat.completion.chunk', created: mintedAtSeconds(runId()), model, choices: [], usage: usageOf(run) })] : []),
    ];
    return body.join('') + 'data: [DONE]\n\n';
  };
  return {
    frame(type, raw) {
      if (type === 'response.started') return start();
      if (type === 'response.output_text.delta' && !structured) {
        const delta = JSON.parse(raw) as { delta: string; reset?: boolean };
        return delta.delta ? start() + chunk({ content: delta.delta }) : '';
      }
      if (type === 'response.completed' || type === 'response.cancelled') return end(JSON.parse(raw) as RunResponse);
      if (type === 'response.failed') {
        const failed = JSON.parse(raw) as { error: { code: Parameters<typeof openAiErrorBody>[0]['code']; message: string } };
        return data(openAiErrorBody(failed.error));
      }
      return '';
    },
    // The calls for the caller to run end the chunks, as OpenAI's do: the caller answers them with a new request.
    waiting: (run) => (toolCallsOf(run).length > 0 ? end(run) : undefined),
  };
}

const data = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
