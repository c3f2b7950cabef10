import { invalidRequest, type ErrorCode, type RunStatus } from '../../domain/errors';
import { mintedAtSeconds } from '../../domain/ids';
import type { CallerExchange, OutputItem, RunResponse } from '../../domain/runs';
import type { StreamWire } from '../../runs/runEventRelay';
import type { ChatMessageIn, ResponseBody } from '../routes/v1/schema';
import type { ActionAnswer } from '../../domain/actions';
import { cappedToolOutput, exchangeOf, oneRun, toolCallsOf, toolOutputOf } from './chatCompletions';
import { approvalAnswerOf, approvalRequestsOf } from './approvals';
import type { ResponseObject } from './shapes';

/** OpenAI's response statuses, by the run's. */
const STATUS: Record<RunStatus, ResponseObject['status']> = { queued: 'queued', running: 'in_progress', completed: 'completed', failed: 'failed', blocked: 'failed', cancelled: 'cancelled' };

type InputItem = NonNullable<Exclude<ResponseBody['input'], string>>[number];

/** Responses input items as chat messages: messages as they are, a function call's output as a tool message. */
function messageOf(item: InputItem, i: number): ChatMessageIn {
  if (item.type === 'function_call_output') return { role: 'tool', content: cappedToolOutput(String(item.output ?? ''), `input[${i}]`, 'input'), tool_call_id: String(item.call_id ?? '') };
  if (item.type === 'mcp_approval_response') throw invalidRequest(`input[${i}] is an mcp_approval_response: answers end the input, after its messages.`, 'input');
  if (item.type === 'function_call') return { role: 'assistant', content: null, tool_calls: [{ id: String(item.call_id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '{}') } }] };
  if (item.type !== undefined && item.type !== 'message') throw invalidRequest(`input[${i}] is a ${item.type} item: only messages, function calls, their outputs and approval responses are taken.`, 'input');
  return { role: item.role as ChatMessageIn['role'], content: item.content as ChatMessageIn['content'] };
}

/** The input as chat messages (a string is one user message). */
function inputMessages(body: ResponseBody): ChatMessageIn[] {
  const items: ChatMessageIn[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []).map(messageOf);
  if (items.length === 0) throw invalidRequest('input must not be empty.', 'input');
  return items;
}

/** The items that answer a response's waiting calls: its client-run tools' outputs, approvers' decisions. */
const ANSWERS = new Set(['function_call_output', 'mcp_approval_response']);

/**
 * The answers a request brings for the calls a response waits on: the function call outputs and
 * approval responses that end its input, all for one response's run, which they continue. An approval
 * continues the response `previous_response_id` names, as OpenAI's does. Undefined when the input
 * does not end with them (a new turn).
 */
export function callAnswersOf(body: ResponseBody): { runId: string; answers: ActionAnswer[] } | undefined {
  const items = typeof body.input === 'string' ? [] : (body.input ?? []);
  let first = items.length;
  while (first > 0 && ANSWERS.has(items[first - 1].type ?? '')) first--;
  if (first === items.length) return undefined;
  const answered = items.slice(first).map((item, k) => {
    const i = first + k;
    if (item.type === 'mcp_approval_response') return approvalAnswerOf(item, `input[${i}]`);
    return toolOutputOf(String(item.call_id ?? ''), String(item.output ?? ''), { item: `input[${i}]`, idField: 'call_id' }, 'input');
  });
  const runId = oneRun(answered, 'input');
  const approves = items.some((item) => item.type === 'mcp_approval_response');
  if ((approves || body.previous_response_id) && body.previous_response_id !== runId) {
    throw invalidRequest(`previous_response_id must be ${runId}: the response whose calls the input answers.`, 'previous_response_id');
  }
  return { runId, answers: answered.map((a) => a.answer) };
}

/**
 * The request's input and instructions as the run's: the last user message is the input, the earlier
 * items its history, OpenAI's `instructions` the caller's (after the agent's own). A turn that
 * continues a stored conversation sends only what is new: the conversation's memory is its history.
 */
export function responseExchange(body: ResponseBody, continuing: boolean): { input: string; exchange: CallerExchange } {
  const { input, exchange } = exchangeOf(inputMessages(body));
  const instructions = [body.instructions, exchange.instructions].filter(Boolean).join('\n\n');
  const history = continuing && exchange.history?.length === 0 ? undefined : exchange.history;
  return { input, exchange: { ...(instructions && { instructions }), ...(history && { history }) } };
}

/**
 * A run's output as OpenAI's output items: one assistant message (text, JSON text, or a refusal), or
 * the calls it waits on: the function calls its caller runs, the approval requests an approver answers.
 */
function outputOf(run: RunResponse): ResponseObject['output'] {
  const calls = toolCallsOf(run);
  const approvals = approvalRequestsOf(run);
  if (calls.length > 0 || approvals.length > 0) return [...calls.map((c) => ({ type: 'function_call', id: `fc_${c.id}`, call_id: c.id, name: c.name, arguments: c.arguments, status: 'completed' })), ...approvals];
  if (run.output.length === 0) return [];
  return [{ type: 'message', id: `msg_${run.id}`, status: 'completed', role: 'assistant', content: run.output.map(contentOf) }];
}

function contentOf(item: OutputItem) {
  if (item.type === 'refusal') return { type: 'refusal', refusal: item.refusal };
  return { type: 'output_text', text: item.type === 'json' ? JSON.stringify(item.json) : item.text, annotations: [] };
}

/**
 * The response's status: a run waiting on its caller's tools is `completed`, as OpenAI's response
 * with function calls is; one waiting for an approver is `in_progress`, as it is (a poller goes on,
 * and sees the answer once the approver decides); one cut at its output cap `incomplete`.
 */
function statusOf(run: RunResponse): ResponseObject['status'] {
  if (run.required_action) return approvalRequestsOf(run).length > 0 ? 'in_progress' : 'completed';
  return run.incomplete_details ? 'incomplete' : STATUS[run.status];
}

/** A run as OpenAI's response object; `model` as the request named the agent. */
export function responseObject(run: RunResponse, o: { model: string; previousResponseId?: string | null; store: boolean; background: boolean; error?: { code: ErrorCode; message: string } }): ResponseObject {
  const output = outputOf(run);
  const text = run.output.map((item) => (item.type === 'json' ? JSON.stringify(item.json) : item.type === 'refusal' ? '' : item.text)).join('');
  return {
    id: run.id,
    object: 'response',
    created_at: mintedAtSeconds(run.id),
    status: statusOf(run),
    model: o.model,
    output,
    output_text: text,
    usage: {
      input_tokens: run.usage.input_tokens,
      input_tokens_details: { cached_tokens: run.usage.cached_tokens },
      output_tokens: run.usage.output_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: run.usage.total_tokens,
    },
    error: o.error ? { code: o.error.code, message: o.error.message } : null,
    incomplete_details: run.incomplete_details ?? null,
    instructions: null,
    metadata: run.metadata,
    previous_response_id: o.previousResponseId ?? null,
    ...(run.conversation && { conversation: { id: run.conversation } }),
    store: o.store,
    background: o.background,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
  };
}

/** The event that ends a response's stream, by its status: one waiting for an approver ends `in_progress`, as its response stands. */
const TERMINAL: Record<string, string> = { incomplete: 'response.incomplete', in_progress: 'response.in_progress' };

/**
 * A run's events as the Responses API's: `response.created` and `response.in_progress`, the message
 * item and its text part opened with the first text, each `response.output_text.delta`, then the
 * text's, part's and item's `done` events and `response.completed` (or `response.incomplete`,
 * `response.failed`, `response.cancelled`). A run that waits on its caller's tools ends so too, its
 * function calls as items; one that waits for an approver, its `mcp_approval_request` items and
 * `response.in_progress` (the response as it stands). Each event carries a `sequence_number` from 0,
 * the same on every replay of the run's stream, so a client resumes after one with `starting_after`
 * (events up to it are skipped).
 */
export function responseEvents(o: { runId: () => string; model: string; store: boolean; background: boolean; structured: boolean; startingAfter?: number }): StreamWire {
  let sequence = -1;
  let text = '';
  let started = false;
  let opened = false;
  const event = (type: string, payload: Record<string, unknown>) => {
    sequence += 1;
    if (o.startingAfter !== undefined && sequence <= o.startingAfter) return '';
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...payload })}\n\n`;
  };
  const itemId = () => `msg_${o.runId()}`;
  const shown = { model: o.model, store: o.store, background: o.background };
  const shell = (status: string) => ({ id: o.runId(), object: 'response', created_at: mintedAtSeconds(o.runId()), status, model: o.model, output: [], store: o.store, background: o.background });
  // Also on a continued run's stream, which has no response.started of its own.
  const start = () => {
    if (started) return '';
    started = true;
    return event('response.created', { response: shell('in_progress') }) + event('response.in_progress', { response: shell('in_progress') });
  };
  const open = () => {
    if (opened) return '';
    opened = true;
    return (
      event('response.output_item.added', { output_index: 0, item: { type: 'message', id: itemId(), status: 'in_progress', role: 'assistant', content: [] } }) +
      event('response.content_part.added', { item_id: itemId(), output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } })
    );
  };
  const closeMessage = (message: unknown, whole: string) =>
    open() +
    (o.structured || text === '' ? (whole ? event('response.output_text.delta', { item_id: itemId(), output_index: 0, content_index: 0, delta: whole }) : '') : '') +
    event('response.output_text.done', { item_id: itemId(), output_index: 0, content_index: 0, text: whole }) +
    event('response.content_part.done', { item_id: itemId(), output_index: 0, content_index: 0, part: { type: 'output_text', text: whole, annotations: [] } }) +
    event('response.output_item.done', { output_index: 0, item: message });
  const end = (run: RunResponse) => {
    const response = responseObject(run, shown);
    const items = response.output as { type: string }[];
    // The calls the run waits on: its caller's function calls, its approvers' approval requests.
    const calls = items.filter((item) => item.type === 'function_call' || item.type === 'mcp_approval_request');
    // Text streamed before calls for the caller is a message of its own, closed before them, as OpenAI's is.
    const spoken = opened && calls.length > 0 ? { type: 'message', id: itemId(), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] } : undefined;
    const message = items.find((item) => item.type === 'message') ?? spoken;
    const whole = spoken ? text : response.output_text;
    const first = message ? 1 : 0;
    const shownResponse = spoken ? { ...response, output: [spoken, ...calls], output_text: text } : response;
    return (
      start() +
      (message ? closeMessage(message, whole) : '') +
      calls.map((item, i) => event('response.output_item.added', { output_index: first + i, item: item.type === 'function_call' ? { ...item, status: 'in_progress' } : item }) + event('response.output_item.done', { output_index: first + i, item })).join('') +
      event(TERMINAL[response.status] ?? 'response.completed', { response: shownResponse })
    );
  };
  return {
    frame(type, raw) {
      if (type === 'response.started') return start();
      if (type === 'response.output_text.delta' && !o.structured) {
        const { delta } = JSON.parse(raw) as { delta: string };
        if (!delta) return '';
        text += delta;
        return start() + open() + event('response.output_text.delta', { item_id: itemId(), output_index: 0, content_index: 0, delta });
      }
      if (type === 'response.completed') return end(JSON.parse(raw) as RunResponse);
      if (type === 'response.cancelled') return start() + event('response.cancelled', { response: responseObject(JSON.parse(raw) as RunResponse, shown) });
      if (type === 'response.failed') {
        const failed = JSON.parse(raw) as { error: { code: ErrorCode; message: string } };
        return start() + event('response.failed', { response: { ...shell('failed'), error: { code: failed.error.code, message: failed.error.message } } });
      }
      return '';
    },
    // The calls it waits on end the events: the caller answers them with a new request (an approver may answer them elsewhere).
    waiting: (run) => (toolCallsOf(run).length > 0 || approvalRequestsOf(run).length > 0 ? end(run) : undefined),
  };
}
