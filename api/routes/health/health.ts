import Router from '@koa/router';
import { ping } from '../../../db/sql';
import { LIVE, readiness, SHUTTING_DOWN, type CheckStatus } from '../../../domain/health';
import { redis } from '../../../infra/redis';
import { temporal } from '../../../infra/temporalClient';
import { unopenableSince } from '../../../infra/unopenablePayloads';
import { isShuttingDown } from '../../../runs/shutdown';
import type { AppState } from '../../middleware/state';

const CHECK_TIMEOUT_MS = 2000;

function within<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref())]);
}

async function check(probe: () => Promise<unknown>): Promise<CheckStatus> {
  try {
    await within(probe());
    return 'ok';
  } catch {
    return 'unavailable';
  }
}

/**
 * GET /healthz: the process is up. GET /readyz: whether this instance can serve, else 503.
 * PostgreSQL and Temporal are needed by every endpoint that does anything; without Redis the
 * instance still serves reads (runs, logs, conversations), so a Redis blip reports `degraded`
 * instead of taking every instance out of rotation. Shutting down, it is not ready at once. A payload
 * the deployment could not open lately (infra/unopenablePayloads.ts) fails the check: some workflow is
 * stuck until its key is back, and no other signal would reach whoever rotates instances.
 */
export function healthRoutes(router: Router<AppState>): void {
  router.get('/healthz', (ctx) => {
    ctx.body = LIVE;
  });
  router.get('/readyz', async (ctx) => {
    if (isShuttingDown()) {
      ctx.status = 503;
      ctx.body = SHUTTING_DOWN;
      return;
    }
    const [postgres, redisStatus, temporalStatus, unopenable] = await Promise.all([
      check(ping),
      check(() => redis().ping()),
      check(async () => (await temporal()).workflowService.getSystemInfo({})),
      within(unopenableSince()).catch(() => undefined),
    ]);
    const answer = readiness({ postgres, redis: redisStatus, temporal: temporalStatus, unopenable: Boolean(unopenable) });
    ctx.status = answer.status === 'unavailable' ? 503 : 200;
    ctx.body = answer;
  });
}
