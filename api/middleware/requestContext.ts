import type { Middleware, ParameterizedContext } from 'koa';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { mintId } from '../../domain/ids';
import { logger } from '../../infra/logger';
import { httpDuration, httpRequests } from '../../infra/metrics';
import { startTracing } from '../../infra/tracing';
import type { AppState } from './state';

/** Probes and scrapes: neither logged nor traced (a load balancer's every few seconds would drown both). */
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

let tracer: Tracer | undefined;

/** A path segment that is a signed grant (domain/grants.ts): the whole credential of a document transfer. */
const GRANT_SEGMENT = /\/g1\.[^/]*/g;

/** The path as logs and spans may keep it: a transfer grant in it is replaced by `{token}`. */
export function loggablePath(path: string): string {
  return path.replace(GRANT_SEGMENT, '/{token}');
}

/** The request's server span, continuing the caller's `traceparent`: an invalid one extracts to nothing, and the span starts a trace. */
function serverSpan(ctx: ParameterizedContext<AppState>): { span: Span; active: Context } {
  // Installed before the first extraction, which needs its propagator.
  tracer ??= startTracing('agent-execution-api').tracer;
  const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
  const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': loggablePath(ctx.path) } }, parent);
  return { span, active: trace.setSpan(parent, span) };
}

/**
 * Mints the request id every response carries (header, and error bodies), writes one access log
 * line per request (method, route, status, timing and ids, never bodies), and counts the request
 * under its route template (`unmatched` for a path no route has, so a prober cannot grow the labels).
 * Each request is a server span: its trace id is the request's `trace_id`, and the workflows it
 * starts continue its trace.
 */
export const requestContext: Middleware<AppState> = async (ctx, next) => {
  const requestId = mintId('request');
  const started = process.hrtime.bigint();
  ctx.state.requestId = requestId;
  ctx.set('X-Request-Id', requestId);
  const traced = QUIET.has(ctx.path) ? undefined : serverSpan(ctx);
  if (traced) ctx.state.traceId = traced.span.spanContext().traceId;
  try {
    await (traced ? context.with(traced.active, next) : next());
  } finally {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const route = (ctx as { _matchedRoute?: string })._matchedRoute;
    const labels = { method: ctx.method, route: route ?? 'unmatched', code: String(ctx.status) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, ms / 1000);
    if (traced) {
      // Named by its route template once routed, so spans group as the metrics do.
      if (route) traced.span.updateName(`${ctx.method} ${route}`).setAttribute('http.route', route);
      traced.span.setAttribute('http.response.status_code', ctx.status);
      if (ctx.status >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
      traced.span.end();
      logger.info(
        { request_id: requestId, trace_id: ctx.state.traceId, run_id: ctx.state.runId, method: ctx.method, path: loggablePath(ctx.path), status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  }
};
