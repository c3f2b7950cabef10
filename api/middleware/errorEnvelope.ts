import type { Context, Middleware } from 'koa';
import { errorBody, ServiceError, type ErrorCode, type RunStatus } from '../../domain/errors';
import { OPENAI_PREFIX, openAiErrorBody } from '../openai/errors';
import { logger } from '../../infra/logger';
import { unavailableDependency } from '../../infra/dependencyErrors';
import { dependencyFailed } from '../../infra/dependencyOutages';
import { DEPENDENCY_RETRY_AFTER_S } from '../../domain/timings';
import type { AppState } from './state';

/** The one place a failure becomes the spec's error object; anything unexpected discloses nothing. */
export const errorEnvelope: Middleware<AppState> = async (ctx, next) => {
  try {
    await next();
    // An unknown path or method is a capability the service does not have: 501 from the table.
    if (ctx.status === 404 && ctx.body === undefined) throw new ServiceError('not_implemented', `No endpoint for ${ctx.method} ${ctx.path}.`);
  } catch (err) {
    const known = err instanceof ServiceError ? err : dependencyFailure(err);
    if (!known) logger.error({ err, request_id: ctx.state.requestId }, 'unhandled error');
    renderFailure(ctx, known ?? new ServiceError('internal_error', 'Internal error.'));
  }
};

const DEPENDENCY_NAMES = { postgres: 'database', redis: 'cache', temporal: 'workflow engine' } as const;

/**
 * A dependency's outage (infra/dependencyErrors.ts) is the service's and passes: 503 with
 * Retry-After, one code whichever dependency it was, so a client retries instead of giving up.
 */
export function dependencyFailure(err: unknown): ServiceError | undefined {
  const dependency = unavailableDependency(err);
  if (!dependency) return undefined;
  dependencyFailed(dependency, err);
  return new ServiceError('service_unavailable', `The service's ${DEPENDENCY_NAMES[dependency]} is temporarily unavailable; nothing was done. Retry after the time in Retry-After.`, retryAfter());
}

/** The Retry-After of every 503 for a dependency's outage. */
export const retryAfter = () => ({ 'Retry-After': String(DEPENDENCY_RETRY_AFTER_S) });

/** Answers a failure in the envelope; idempotent endpoints also call it, to store what they answer. */
export function renderFailure(ctx: Context & { state: AppState }, failure: ServiceError): void {
  ctx.status = failure.httpStatus;
  for (const [name, value] of Object.entries(failure.headers)) ctx.set(name, value);
  ctx.body = failureBody(ctx, failure);
}

/**
 * The one shaper of a failure's body: the spec's envelope (with the run, and the run's own request id,
 * when the failure ended one), or OpenAI's error object on the `/v1` surface, with the same status and our code.
 */
export function failureBody(ctx: Context & { state: AppState }, failure: { code: ErrorCode; message: string; param?: string }, run?: { id: string; status: RunStatus; trace_id: string; request_id: string }) {
  return ctx.path.startsWith(OPENAI_PREFIX) ? openAiErrorBody(failure) : errorBody(failure, run?.request_id ?? ctx.state.requestId, run);
}
