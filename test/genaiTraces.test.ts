import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { usePhoenix, type PhoenixSpan } from './support/phoenix';
import { call, closeAll, scriptModel, tenant, until, type Tenant } from './support/stack';
import { useTracedProcesses, type TracedProcesses } from './support/tracedProcesses';

/**
 * A run's spans as an LLM-observability tool reads them: Arize Phoenix, which turns the GenAI
 * conventions' spans into its own kinds (AGENT, LLM, TOOL), receives what the API and a worker export
 * and answers it back on its REST API. Content reaches it only with
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and never a stateless run's.
 */
const phoenix = usePhoenix();
const processes = useTracedProcesses();

let toolServer: Server;
let toolUrl = '';
beforeAll(async () => {
  toolServer = createServer((req, res) => req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"state":"shipped"}')));
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/orders`;
});
afterAll(async () => {
  toolServer.close();
  await closeAll();
});

const SCOPES = ['responses:create', 'conversations:create', 'messages:create'];
const withTool = () => ({ tools: [{ type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } }, url: toolUrl }] });

/** Exporting to Phoenix under a project of the test's own; batches leave every 100 ms. */
function exportingTo(project: string, endpoint: string, more: Record<string, string> = {}): Record<string, string> {
  return { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_RESOURCE_ATTRIBUTES: `openinference.project.name=${project}`, ...more };
}

/** One run with one tool call (the order's id is `secret`, the input says it too): a conversation's message, or a stateless response. */
async function runWithToolCall(traced: TracedProcesses, t: Tenant, how: 'message' | 'response', secret: string): Promise<{ traceId: string; conversation?: string }> {
  await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup_order', arguments: JSON.stringify({ id: secret }) }] }, { text: 'It shipped.', usage: { prompt_tokens: 31, completion_tokens: 4 } }]);
  const input = `Where is order ${secret}?`;
  let run;
  let conversation: string | undefined;
  if (how === 'message') {
    conversation = (await call(traced.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } })).body.id;
    run = await call(traced.url, 'POST', `/api/v2/conversations/${conversation}/messages`, { key: t.key, body: { input } });
  } else {
    run = await call(traced.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input } });
  }
  expect(run.status).toBe(200);
  expect(run.body.status).toBe('completed');
  await traced.settled(run.body.id);
  return { traceId: run.body.trace_id, conversation };
}

/** The run's spans in Phoenix once its agent span, both model calls and its tool call are there. */
function runSpans(project: string, traceId: string): Promise<PhoenixSpan[]> {
  return until(async () => {
    const spans = await phoenix.spans(project, traceId);
    const kinds = spans.map((s) => s.span_kind);
    return kinds.includes('AGENT') && kinds.includes('TOOL') && kinds.filter((k) => k === 'LLM').length === 2 ? spans : undefined;
  }, 'the run’s AGENT, LLM and TOOL spans in Phoenix', 90);
}

const ofKind = (spans: PhoenixSpan[], kind: string) => spans.filter((s) => s.span_kind === kind);

/** Whether `ancestor` is above `span` in the trace. */
function under(spans: PhoenixSpan[], span: PhoenixSpan, ancestor: PhoenixSpan): boolean {
  const byId = new Map(spans.map((s) => [s.context.span_id, s]));
  for (let at = span.parent_id ? byId.get(span.parent_id) : undefined; at; at = at.parent_id ? byId.get(at.parent_id) : undefined) if (at === ancestor) return true;
  return false;
}

describe('GenAI traces in Arize Phoenix', () => {
  it('show a run with one tool call as one trace: an AGENT span above two LLM spans with their tokens and a TOOL span, with the conversation’s id and no content by default (http/protobuf)', async () => {
    const project = `plain-${randomUUID()}`;
    const traced = await processes.start(exportingTo(project, phoenix.httpUrl));
    const t = await tenant({ scopes: SCOPES, config: withTool() });
    const secret = `A-${randomUUID()}`;
    const run = await runWithToolCall(traced, t, 'message', secret);
    const spans = await runSpans(project, run.traceId);
    expect(new Set(spans.map((s) => s.context.trace_id))).toEqual(new Set([run.traceId]));

    const [agent] = ofKind(spans, 'AGENT');
    expect(agent.name).toBe('invoke_agent agent');
    expect(agent.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.id': t.agent, 'gen_ai.agent.name': 'agent', 'gen_ai.conversation.id': run.conversation, 'gen_ai.provider.name': 'openai' });
    // Phoenix's own name for a conversation.
    expect(agent.attributes['session.id']).toBe(run.conversation);

    const llm = ofKind(spans, 'LLM');
    expect(llm.map((s) => s.name)).toEqual([`chat ${t.model}`, `chat ${t.model}`]);
    // The stub's usage: its default for the tool round, the script's for the answer.
    expect(llm.map((s) => [s.attributes['llm.token_count.prompt'], s.attributes['llm.token_count.completion']]).sort()).toEqual([[10, 5], [31, 4]]);
    for (const s of llm) expect(s.attributes).toMatchObject({ 'gen_ai.request.model': t.model, 'gen_ai.response.model': t.model, 'gen_ai.provider.name': 'openai' });

    const [tool] = ofKind(spans, 'TOOL');
    expect(tool.name).toBe('execute_tool lookup_order');
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'lookup_order', 'gen_ai.tool.call.id': expect.any(String), 'gen_ai.tool.type': 'extension' });
    for (const s of [...llm, tool]) expect(under(spans, s, agent)).toBe(true);

    // Neither the input, nor the tool's arguments, nor the answer.
    for (const s of [agent, ...llm, tool]) expect(JSON.stringify(s)).not.toMatch(new RegExp(`${secret}|It shipped`));
    expect(await traced.stop()).toEqual([0, 0]);
  });

  it('with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, hold a conversation’s messages and tool call, and never a stateless run’s (grpc)', async () => {
    const project = `content-${randomUUID()}`;
    const traced = await processes.start(exportingTo(project, phoenix.grpcUrl, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }));
    const t = await tenant({ scopes: SCOPES, config: { ...withTool(), instructions: 'Answer in one line.' } });

    const kept = `K-${randomUUID()}`;
    const conversational = await runSpans(project, (await runWithToolCall(traced, t, 'message', kept)).traceId);
    const [first, second] = ofKind(conversational, 'LLM').sort((a, b) => String(a.attributes['llm.token_count.prompt']).localeCompare(String(b.attributes['llm.token_count.prompt'])));
    expect(JSON.parse(String(first.attributes['gen_ai.input.messages']))).toEqual([{ role: 'user', parts: [{ type: 'text', content: `Where is order ${kept}?` }] }]);
    expect(JSON.parse(String(first.attributes['gen_ai.system_instructions']))).toEqual([{ type: 'text', content: expect.stringContaining('Answer in one line.') }]);
    expect(JSON.parse(String(first.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'tool_call', id: expect.any(String), name: 'lookup_order', arguments: JSON.stringify({ id: kept }) }], finish_reason: 'tool_calls' },
    ]);
    expect(JSON.parse(String(second.attributes['gen_ai.output.messages']))).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'It shipped.' }], finish_reason: 'stop' }]);
    const [tool] = ofKind(conversational, 'TOOL');
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.call.arguments': JSON.stringify({ id: kept }), 'gen_ai.tool.call.result': '{"state":"shipped"}' });

    const sealed = `S-${randomUUID()}`;
    const stateless = await runSpans(project, (await runWithToolCall(traced, t, 'response', sealed)).traceId);
    for (const s of stateless) expect(JSON.stringify(s)).not.toMatch(new RegExp(`${sealed}|It shipped|Answer in one line|gen_ai\\.(input|output)\\.messages|gen_ai\\.tool\\.call\\.(arguments|result)`));
    expect(await traced.stop()).toEqual([0, 0]);
  });
});
