import { randomBytes } from 'node:crypto';
import { otlpProtocol } from '../infra/tracing';
import { otlpReceiver, type ReceivedSpan } from './support/otlpReceiver';
import { call, providerRequests, scriptModel, tenant, useApi, type Tenant } from './support/stack';
import type { StubReply } from './stack/stubProvider';
import { useTracedProcesses } from './support/tracedProcesses';
import { everythingServer } from './support/mcpEverything';
import { ingest, uploadedDocument } from './support/documents';

/**
 * A run's `trace_id` is the W3C trace id of the request that started it, carried through its
 * workflow and activities to the provider request's `traceparent`; spans leave a process only when
 * OTEL_TRACES_EXPORTER=otlp, over the OTLP protocol named (http/protobuf by default, http/json, grpc).
 */
const api = useApi();

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The traceparent of the run's (first) provider request. */
async function providerTraceparent(t: Tenant): Promise<string> {
  const [sent] = await providerRequests(t.model);
  return String(sent.headers.traceparent);
}

describe('a run started by a request', () => {
  it("continues the caller's traceparent: the run's trace_id and the provider request's trace are the caller's trace", async () => {
    const t = await tenant();
    const traceId = hex(16);
    const callerSpan = hex(8);
    const run = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers: { traceparent: `00-${traceId}-${callerSpan}-01` } });
    expect(run.status).toBe(200);
    expect(run.body.trace_id).toBe(traceId);
    expect((await call(api.url, 'GET', `/api/v2/runs/${run.body.id}`, { key: t.key })).body.trace_id).toBe(traceId);
    const [, sentTrace, sentSpan] = TRACEPARENT.exec(await providerTraceparent(t))!;
    expect(sentTrace).toBe(traceId);
    // The provider's parent is the activity's span, not the caller's.
    expect(sentSpan).not.toBe(callerSpan);
  });

  it.each([
    ['no traceparent', undefined],
    ['an invalid traceparent', `00-${'0'.repeat(32)}-${hex(8)}-01`],
  ])('with %s starts a trace of its own, which the provider request carries', async (_, traceparent) => {
    const t = await tenant();
    const run = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers: traceparent ? { traceparent } : {} });
    expect(run.status).toBe(200);
    expect(run.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(run.body.trace_id).not.toBe('0'.repeat(32));
    expect(TRACEPARENT.exec(await providerTraceparent(t))![1]).toBe(run.body.trace_id);
  });
});

describe('the OTLP protocol', () => {
  afterEach(() => {
    delete process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL;
  });

  it('is http/protobuf unless named; the traces variable wins; a name OTLP does not have falls back to http/protobuf', () => {
    expect(otlpProtocol()).toBe('http/protobuf');
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'grpc';
    expect(otlpProtocol()).toBe('grpc');
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = 'http/json';
    expect(otlpProtocol()).toBe('http/json');
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = 'carrier-pigeon';
    expect(otlpProtocol()).toBe('http/protobuf');
  });
});

/** The ids of the spans above `span`. */
function ancestors(spans: ReceivedSpan[], span: ReceivedSpan): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const found: string[] = [];
  for (let at = byId.get(span.parentSpanId ?? ''); at; at = byId.get(at.parentSpanId ?? '')) found.push(at.spanId);
  return found;
}

describe('exporting spans', () => {
  const processes = useTracedProcesses();

  /**
   * Runs one response through an API and a worker process with `env`, then stops both (SIGTERM, as a
   * deploy does); returns the run. `before` prepares the tenant (as its key's `scopes` allow) first.
   */
  async function runThroughProcesses(
    env: Record<string, string | undefined>,
    traceparent: string,
    o: { replies?: StubReply[]; config?: Record<string, unknown>; scopes?: string[]; before?: (t: Tenant) => Promise<void>; input?: string } = {},
  ): Promise<{ status: number; body: any; t: Tenant }> {
    const traced = await processes.start(env);
    const t = await tenant({ config: o.config, scopes: o.scopes });
    await o.before?.(t);
    if (o.replies) await scriptModel(t.model, o.replies);
    const run = await call(traced.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: o.input ?? 'hi' }, headers: { traceparent } });
    await traced.settled(run.body.id);
    expect(await traced.stop()).toEqual([0, 0]);
    return { ...run, t };
  }

  // http/protobuf is OTLP's default, and what is sent when no protocol is named.
  it.each([
    ['http/protobuf (the default)', 'http/protobuf', undefined],
    ['http/json', 'http/json', 'http/json'],
    ['grpc', 'grpc', 'grpc'],
  ] as const)('with OTEL_TRACES_EXPORTER=otlp over %s, the API and the worker export their spans of the run, all in the caller’s trace, with the configured headers', async (_, protocol, asked) => {
    const receiver = await otlpReceiver(protocol);
    try {
      const traceId = hex(16);
      const callerSpan = hex(8);
      // Batches leave only at shutdown, so this also checks that both processes flush when they stop.
      const run = await runThroughProcesses(
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: asked, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%3D1', OTEL_BSP_SCHEDULE_DELAY: '600000' },
        `00-${traceId}-${callerSpan}-01`,
      );
      expect(run.status).toBe(200);
      expect(run.body.trace_id).toBe(traceId);
      expect(receiver.headers.length).toBeGreaterThan(0);
      for (const headers of receiver.headers) expect(headers['x-collector-key']).toBe('k=1');
      const inTrace = (service: string) => receiver.spans.filter((s) => s.service === service && s.traceId === traceId).map((s) => s.name);
      expect(inTrace('agent-execution-api')).toEqual(expect.arrayContaining(['POST /api/v2/responses', 'StartWorkflow:agentRun']));
      expect(inTrace('agent-execution-worker')).toEqual(expect.arrayContaining(['RunWorkflow:agentRun', 'invoke_agent agent', 'StartActivity:startRun', 'RunActivity:startRun', `chat ${run.t.model}`]));
      // One tree: the request's span is the caller's child, and the workflow the child of the request's start of it.
      const named = (name: string) => receiver.spans.find((s) => s.name === name)!;
      expect(named('POST /api/v2/responses').parentSpanId).toBe(callerSpan);
      expect(named('StartWorkflow:agentRun').parentSpanId).toBe(named('POST /api/v2/responses').spanId);
      expect(named('RunWorkflow:agentRun').parentSpanId).toBe(named('StartWorkflow:agentRun').spanId);
      // The run's agent span, then its activities, each model call a span of its own inside.
      expect(named('invoke_agent agent').parentSpanId).toBe(named('RunWorkflow:agentRun').spanId);
      expect(named('StartActivity:startRun').parentSpanId).toBe(named('invoke_agent agent').spanId);
      expect(named(`chat ${run.t.model}`).parentSpanId).toBe(named('RunActivity:startRun').spanId);
      // The provider's request names the call's span as its parent.
      expect(TRACEPARENT.exec(await providerTraceparent(run.t))![2]).toBe(named(`chat ${run.t.model}`).spanId);
    } finally {
      receiver.close();
    }
  });

  it('makes a retried model call a second chat span, marked as a retry, the failed one with its error.type, both under the run’s agent span', async () => {
    const receiver = await otlpReceiver('http/protobuf');
    try {
      const traceId = hex(16);
      const run = await runThroughProcesses({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, `00-${traceId}-${hex(8)}-01`, { replies: [{ status: 503 }, { text: 'second time lucky' }] });
      expect(run.status).toBe(200);
      const calls = receiver.spans.filter((s) => s.traceId === traceId && s.name === `chat ${run.t.model}`);
      expect(calls.map((s) => [s.attributes['aes.model_call.attempt'], s.attributes['aes.model_call.retry'], s.attributes['error.type']]).sort()).toEqual([
        [1, false, '503'],
        [2, true, undefined],
      ]);
      const agent = receiver.spans.find((s) => s.traceId === traceId && s.name === 'invoke_agent agent')!;
      for (const s of calls) expect(ancestors(receiver.spans, s)).toContain(agent.spanId);
      expect(calls.find((s) => s.attributes['aes.model_call.retry'])!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5, 'gen_ai.response.finish_reasons': ['stop'] });
    } finally {
      receiver.close();
    }
  });

  it('makes a remote MCP tool call an execute_tool span that names its server, and the run’s retrieval a retrieval span with the chunks it found, under the run’s agent span', async () => {
    const receiver = await otlpReceiver('http/protobuf');
    const everything = await everythingServer();
    try {
      const traceId = hex(16);
      const config = { tools: [{ type: 'mcp', server_label: 'everything', server_url: everything.url, allowed_tools: ['echo'] }], knowledge: { collections: ['handbook'] } };
      const replies = [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"hi"}' }] }, { text: 'It said hi.' }];
      // The collection holds one passage, which the run's input finds.
      const before = async (t: Tenant) => {
        const document = await uploadedDocument(api.url, t.key, 'notes.txt', 'text/plain', Buffer.from('The zephyrine valve must be checked weekly.'));
        expect(await ingest(api.url, t.key, document, 'handbook')).toMatchObject({ status: 'completed' });
      };
      const scopes = ['responses:create', 'documents:create', 'knowledge:write', 'knowledge:read'];
      const run = await runThroughProcesses({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, `00-${traceId}-${hex(8)}-01`, { config, replies, scopes, before, input: 'Echo what the zephyrine valve needs.' });
      expect(run.body.status).toBe('completed');
      const tool = receiver.spans.find((s) => s.traceId === traceId && s.name === 'execute_tool everything__echo')!;
      const server = new URL(everything.url);
      expect(tool.attributes).toEqual({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'everything__echo',
        'gen_ai.tool.call.id': expect.any(String),
        'gen_ai.tool.type': 'extension',
        'aes.mcp.server_label': 'everything',
        'mcp.method.name': 'tools/call',
        'server.address': server.hostname,
        'server.port': Number(server.port),
      });
      const retrieval = receiver.spans.find((s) => s.traceId === traceId && s.name === 'retrieval handbook')!;
      expect(retrieval.attributes).toEqual({ 'gen_ai.operation.name': 'retrieval', 'gen_ai.data_source.id': 'handbook', 'aes.retrieval.chunks': 1 });
      const agent = receiver.spans.find((s) => s.traceId === traceId && s.name === 'invoke_agent agent')!;
      for (const s of [tool, retrieval]) expect(ancestors(receiver.spans, s)).toContain(agent.spanId);
    } finally {
      receiver.close();
      await everything.stop();
    }
  });

  it('by default, sends nothing, even with an endpoint configured, and still carries the trace to the provider', async () => {
    const receiver = await otlpReceiver('http/protobuf');
    try {
      const traceId = hex(16);
      const run = await runThroughProcesses({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10' }, `00-${traceId}-${hex(8)}-01`);
      expect(run.status).toBe(200);
      expect(run.body.trace_id).toBe(traceId);
      expect(TRACEPARENT.exec(await providerTraceparent(run.t))![1]).toBe(traceId);
      expect(receiver.posts).toBe(0);
    } finally {
      receiver.close();
    }
  });
});
