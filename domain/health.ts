import { closed, constant, oneOf, oneOfValues, optional, type Static } from './shape';

/** What /healthz and /readyz answer, declared once for their views and the OpenAPI document. */

export const CHECK_STATUSES = ['ok', 'unavailable'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export const Liveness = closed({ status: constant('ok') });
export const LIVE: Static<typeof Liveness> = { status: 'ok' };

const check = oneOfValues(CHECK_STATUSES);
export const Readiness = oneOf([
  closed({ status: oneOfValues(['ready', 'degraded', 'unavailable'] as const), checks: closed({ postgres: check, redis: check, temporal: check, payloads: optional(constant('unopenable')) }) }),
  closed({ status: constant('shutting_down') }),
]);

export const SHUTTING_DOWN: Static<typeof Readiness> = { status: 'shutting_down' };

/**
 * Ready when PostgreSQL and Temporal answer and no payload was unopenable lately; without Redis it
 * still serves reads, so a Redis blip is `degraded`, not out of rotation.
 */
export function readiness(c: { postgres: CheckStatus; redis: CheckStatus; temporal: CheckStatus; unopenable: boolean }): Static<typeof Readiness> {
  const checks = { postgres: c.postgres, redis: c.redis, temporal: c.temporal, ...(c.unopenable && { payloads: 'unopenable' as const }) };
  const ready = c.postgres === 'ok' && c.temporal === 'ok' && !c.unopenable;
  return { status: !ready ? 'unavailable' : c.redis === 'ok' ? 'ready' : 'degraded', checks };
}
