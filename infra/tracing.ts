import { randomBytes } from 'node:crypto';
import { context, diag, DiagLogLevel, propagation, SpanStatusCode, trace, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';
import { ApplicationFailure } from '@temporalio/common';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, NoopSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { GENAI } from '../domain/genaiSpans';
import { logger } from './logger';

/**
 * The process's one tracer provider (the API's, or the worker's). Spans are always made, so every
 * request, workflow and activity has a W3C trace id to carry (a run's `trace_id` is one); they leave
 * the process only when OTEL_TRACES_EXPORTER=otlp, over the OTLP protocol OTEL_EXPORTER_OTLP_PROTOCOL
 * names (otlpProtocol()), each exporter reading the standard OTEL_EXPORTER_OTLP_* variables (endpoint,
 * headers, timeout, compression), in batches (OTEL_BSP_*). The sampler is the SDK's (OTEL_TRACES_SAMPLER).
 */
export interface Tracing {
  tracer: Tracer;
  /** Where finished spans go: the worker hands its workflows' spans (made in the sandbox) here too. */
  processor: SpanProcessor;
  resource: Resource;
}

let installed: (Tracing & { provider: BasicTracerProvider }) | undefined;

/** OTEL_TRACES_EXPORTER: `otlp` exports, `none` (the default) does not; other exporters are not built in. */
export function exporting(): boolean {
  const names = (process.env.OTEL_TRACES_EXPORTER || 'none').split(',').map((s) => s.trim().toLowerCase());
  const unknown = names.filter((n) => n !== 'otlp' && n !== 'none');
  if (unknown.length) logger.warn({ exporters: unknown }, 'OTEL_TRACES_EXPORTER names exporters this service does not have (otlp, none): ignored');
  return names.includes('otlp');
}

export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json', 'grpc'];

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` by default, as
 * OTel's specification has it (and the only HTTP encoding some collectors, Phoenix among them, take).
 * An unknown name is said once and the default used, rather than stopping the process for its spans.
 */
export function otlpProtocol(): OtlpProtocol {
  const asked = (process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim().toLowerCase();
  if ((PROTOCOLS as readonly string[]).includes(asked)) return asked as OtlpProtocol;
  logger.warn({ protocol: asked, known: PROTOCOLS }, 'OTEL_EXPORTER_OTLP_PROTOCOL names a protocol OTLP does not have: spans are exported as http/protobuf');
  return 'http/protobuf';
}

/** The official OTLP exporter of the protocol; each reads its endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*. */
function otlpExporter(protocol: OtlpProtocol): SpanExporter {
  if (protocol === 'grpc') return new GrpcExporter();
  return protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
}

/** Installs the process's tracing on first call (later calls get the same, whatever name they give). */
export function startTracing(defaultServiceName: string): Tracing {
  if (installed) return installed;
  // Export failures (a collector down) are worth a warning; the SDK's chatter below that is not.
  diag.setLogger({ error: (m) => logger.warn({ sdk: 'opentelemetry' }, m), warn: (m) => logger.warn({ sdk: 'opentelemetry' }, m), info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  const processor = exporting() ? new BatchSpanProcessor(otlpExporter(otlpProtocol())) : new NoopSpanProcessor();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the process's own name.
  const resource = new Resource({ 'service.name': defaultServiceName }).merge(envDetectorSync.detect());
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // The active context is carried across awaits (AsyncLocalStorage), so a request's span is the parent of
  // the workflow it starts, and an activity's span the context of its provider request. W3C trace
  // context whatever OTEL_PROPAGATORS says: the service's trace ids are W3C trace ids.
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
  installed = { provider, processor, resource: provider.resource, tracer: provider.getTracer('agent-execution-service') };
  return installed;
}

/**
 * The `traceparent` of an outgoing request: the active span's when one is in the run's trace (an
 * activity span, where spans are exported), else a span id of its own under the run's trace id.
 */
export function traceHeaders(traceId: string): Record<string, string> {
  const carrier: Record<string, string> = {};
  const active = trace.getSpanContext(context.active());
  if (active?.traceId === traceId) propagation.inject(context.active(), carrier);
  else if (/^[0-9a-f]{32}$/.test(traceId)) carrier.traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
  return carrier;
}

/** `error.type` of a failure: a Temporal failure's type (the service's error code), else the error's class. */
export function failureType(err: unknown): string {
  if (err instanceof ApplicationFailure && err.type) return err.type;
  return (err as Error)?.name || '_OTHER';
}

/**
 * `work` inside a span of its own, the active one while it runs (so what it calls is its child): a
 * failure marks it with `error.type` (as `errorType` names it) and an error status.
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>, errorType: (err: unknown) => string = failureType): Promise<T> {
  return trace.getTracer('agent-execution-service').startActiveSpan(name, options, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.setAttribute(GENAI.errorType, errorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Exports what is still batched, then stops; part of the process's shutdown. */
export async function stopTracing(): Promise<void> {
  await installed?.provider.shutdown();
}
