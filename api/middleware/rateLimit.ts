import type { Context, Middleware } from 'koa';
import { ServiceError } from '../../domain/errors';
import { logger } from '../../domain/logger';
import { rateLimiter } from '../rateLimiter';
import type { AppState } from '../state';
import { workspaceOf } from './auth';

type Finder = (ctx: Context & { state: AppState }) => string | undefined | Promise<string | undefined>;

export interface RateLimitDeclaration {
  /** The endpoint's name in the tenant + endpoint dimension. */
  endpoint: string;
  /** The agent the request names, before it is resolved; absent, the agent dimension is skipped. */
  agent?: Finder;
  /** The end user the request names (the spec's "principal"); absent, that dimension is skipped. */
  endUser?: Finder;
}

/**
 * Counts the request against every rate-limit dimension it has, after authentication and before the
 * idempotency claim. Fails closed: when the limiter cannot answer, the request is refused with 503
 * rather than run without limits.
 */
export function rateLimit(declaration: RateLimitDeclaration): Middleware<AppState> {
  return async (ctx, next) => {
    const principal = ctx.state.principal;
    if (!principal) throw new Error(`rateLimit(${declaration.endpoint}) is declared before authentication`);
    const subject = {
      credential: principal.keyId,
      tenant: workspaceOf(principal).publicId,
      endpoint: declaration.endpoint,
      agent: await declaration.agent?.(ctx),
      endUser: await declaration.endUser?.(ctx),
    };
    let decision;
    try {
      decision = await rateLimiter().check(subject);
    } catch (err) {
      logger.error({ err: String(err), request_id: ctx.state.requestId }, 'rate limiter unavailable');
      throw new ServiceError('service_unavailable', 'Rate limiting is temporarily unavailable, so the request was not run; retry shortly.');
    }
    if (!decision.allowed) {
      throw new ServiceError(
        'rate_limited',
        `Rate limit reached: ${decision.limit} requests per ${decision.windowSeconds} seconds for this ${decision.dimension.replace('_', ' + ')}; retry after the window ends.`,
        { 'Retry-After': String(decision.retryAfterSeconds) },
      );
    }
    await next();
  };
}
