import { ServiceError } from '../../domain/errors';
import { logger } from '../../infra/logger';
import { retryAfter } from './errorEnvelope';
import { rateLimiter, type RateLimiter, type RateLimitSubject } from '../../callers/rateLimiter';
import { rateLimited } from '../../infra/metrics';

/**
 * Counts one call against every rate-limit dimension its subject has, or refuses it with 429 and
 * Retry-After. When the limiter cannot answer (Redis down), a call that spends or starts anything
 * fails closed with 503 rather than run without limits; a read (`failOpen`) is served uncounted, so a
 * Redis blip does not take reads down with it. Routes reach this through authorize() (./auth); the
 * unauthenticated OAuth endpoints through a limiter of their own, by client address.
 */
export async function enforceRateLimit(subject: RateLimitSubject, requestId: string, options: { failOpen: boolean; limiter?: RateLimiter }): Promise<void> {
  let decision;
  try {
    decision = await (options.limiter ?? rateLimiter()).check(subject);
  } catch (err) {
    logger.error({ err: String(err), request_id: requestId, fail_open: options.failOpen }, 'rate limiter unavailable');
    if (options.failOpen) return;
    throw new ServiceError('service_unavailable', 'Rate limiting is temporarily unavailable, so the request was not run; retry after the time in Retry-After.', retryAfter());
  }
  if (!decision.allowed) {
    rateLimited.inc({ dimension: decision.dimension });
    throw new ServiceError(
      'rate_limited',
      `Rate limit reached: ${decision.limit} requests per ${decision.windowSeconds} seconds for this ${decision.dimension.replace('_', ' + ')}; retry after the window ends.`,
      { 'Retry-After': String(decision.retryAfterSeconds) },
    );
  }
}
