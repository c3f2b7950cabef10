import type { Context, Middleware } from 'koa';
import { errorBody, ServiceError } from '../../domain/errors';
import { logger } from '../../infra/logger';
import type { AppState } from '../state';

/** The one place a failure becomes the spec's error object; anything unexpected discloses nothing. */
export const errorEnvelope: Middleware<AppState> = async (ctx, next) => {
  try {
    await next();
    // An unknown path or method is a capability the service does not have: 501 from the table.
    if (ctx.status === 404 && ctx.body === undefined) throw new ServiceError('not_implemented', `No endpoint for ${ctx.method} ${ctx.path}.`);
  } catch (err) {
    const known = err instanceof ServiceError;
    if (!known) logger.error({ err, request_id: ctx.state.requestId }, 'unhandled error');
    renderFailure(ctx, known ? err : new ServiceError('internal_error', 'Internal error.'));
  }
};

/** Answers a failure in the envelope; idempotent endpoints also call it, to store what they answer. */
export function renderFailure(ctx: Context & { state: AppState }, failure: ServiceError): void {
  ctx.status = failure.httpStatus;
  for (const [name, value] of Object.entries(failure.headers)) ctx.set(name, value);
  ctx.body = errorBody(failure, ctx.state.requestId);
}
