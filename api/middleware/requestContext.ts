import type { Middleware } from 'koa';
import { mintId } from '../../domain/ids';
import { logger } from '../../infra/logger';
import type { AppState } from '../state';

/**
 * Mints the request id every response carries (header, and error bodies), and writes one access
 * log line per request: method, route, status, timing and ids, never bodies.
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
    if (ctx.path !== '/healthz' && ctx.path !== '/readyz') {
      logger.info(
        { request_id: requestId, trace_id: ctx.state.traceId, run_id: ctx.state.runId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  }
};
