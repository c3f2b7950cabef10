import { timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import { ServiceError } from '../../../domain/errors';
import { config, metricsServed } from '../../../infra/config';
import { registry } from '../../../infra/metrics';
import type { AppState } from '../../middleware/state';

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /metrics: this instance's Prometheus metrics (text exposition format). Like /healthz it sits
 * beside the API, for the operator's scraper, not for customers: with METRICS_TOKEN set it requires
 * that bearer token; without it the endpoint is off (501), except in DEVELOPMENT_MODE, where it is open.
 */
export function metricsRoutes(router: Router<AppState>): void {
  router.get('/metrics', async (ctx) => {
    if (!metricsServed()) throw new ServiceError('not_implemented', 'The metrics endpoint is off: set METRICS_TOKEN to serve it.');
    const token = config().metricsToken;
    if (token !== undefined && !sameToken(ctx.get('Authorization'), `Bearer ${token}`)) {
      throw new ServiceError('authentication_error', 'The metrics endpoint needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
}
