import type { Middleware } from 'koa';
import { RateLimiter } from '../../callers/rateLimiter';
import { enforceRateLimit } from '../middleware/rateLimit';
import type { AppState } from '../middleware/state';

/** Per client address and minute: generous for a person connecting clients, a wall for a script filling tables. */
const PER_ADDRESS_PER_MINUTE = 30;
const byAddress = new RateLimiter({ limits: { credential: PER_ADDRESS_PER_MINUTE, tenant: 0, tenant_endpoint: 0, agent: 0, principal: 0 } });

/**
 * Client registration and authorization requests need no credential and each stores a row; they are
 * counted by client address (ctx.ip: the socket's, or what the trusted proxies saw, TRUST_PROXY_HOPS).
 */
export function throttleByAddress(endpoint: string): Middleware<AppState> {
  return async (ctx, next) => {
    await enforceRateLimit({ credential: `addr:${ctx.ip}`, tenant: 'oauth', endpoint }, ctx.state.requestId, { failOpen: true, limiter: byAddress });
    await next();
  };
}
