import { randomBytes } from 'node:crypto';
import { context, diag, DiagLogLevel, propagation, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalContextManager } from './contextManager';
import { logger } from './logger';

/**
 * The process's one tracer provider (the API's, or the worker's). Spans are always made, so every
 * request, workflow and activity has a W3C trace id to carry (a run's `trace_id` is one); they leave
 * the process only when OTEL_TRACES_EXPORTER=otlp, over OTLP/HTTP as the exporter reads the standard
 * OTEL_EXPORTER_OTLP_* variables, in batches (OTEL_BSP_*). The sampler is the SDK's (OTEL_TRACES_SAMPLER).
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
  const protocol = process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (names.includes('otlp') && protocol && protocol !== 'http/json') logger.warn({ protocol }, 'spans are exported as OTLP http/json; the protocol asked for is not available');
  return names.includes('otlp');
}

/** Installs the process's tracing on first call (later calls get the same, whatever name they give). */
export function startTracing(defaultServiceName: string): Tracing {
  if (installed) return installed;
  // Export failures (a collector down) are worth a warning; the SDK's chatter below that is not.
  diag.setLogger({ error: (m) => logger.warn({ sdk: 'opentelemetry' }, m), warn: (m) => logger.warn({ sdk: 'opentelemetry' }, m), info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  const processor = exporting() ? new BatchSpanProcessor(new OTLPTraceExporter()) : new NoopSpanProcessor();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the process's own name.
  const resource = new Resource({ 'service.name': defaultServiceName }).merge(envDetectorSync.detect());
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // W3C trace context whatever OTEL_PROPAGATORS says: the service's trace ids are W3C trace ids.
  provider.register({ contextManager: new AsyncLocalContextManager(), propagator: new W3CTraceContextPropagator() });
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

/** Exports what is still batched, then stops; part of the process's shutdown. */
export async function stopTracing(): Promise<void> {
  await installed?.provider.shutdown();
}
