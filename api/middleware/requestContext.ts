import type { Middleware } from 'koa';
import { mintId } from '../../domain/ids';
import { logger } from '../../infra/logger';
import { httpDuration, httpRequests } from '../../infra/metrics';
import type { AppState } from '../state';

/**
 * Mints the request id every response carries (header, and error bodies), writes one access log
 * line per request (method, route, status, timing and ids, never bodies), and counts the request
 * under its route template (`unmatched` for a path no route has, so a prober cannot grow the labels).
 */
export const requestContext: Middleware<AppState> = async (ctx, next) => {
  const requestId = mintId('request');
  const started = process.hrtime.bigint();
  ctx.state.requestId = requestId;
  ctx.set('X-Request-Id', requestId);
  try {
    await next();
  } finally {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const labels = { method: ctx.method, route: (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched', code: String(ctx.status) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, ms / 1000);
    if (ctx.path !== '/healthz' && ctx.path !== '/readyz' && ctx.path !== '/metrics') {
      logger.info(
        { request_id: requestId, trace_id: ctx.state.traceId, run_id: ctx.state.runId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  }
};
