import Router from '@koa/router';
import { db } from '../../db/sequelize';
import { redis } from '../../db/redis';
import type { AppState } from '../state';
import { temporal } from '../../infra/temporalClient';

const CHECK_TIMEOUT_MS = 2000;

function within<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref())]);
}

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'unavailable'> {
  try {
    await within(probe());
    return 'ok';
  } catch {
    return 'unavailable';
  }
}

/** GET /healthz: the process is up. GET /readyz: its dependencies answer, else 503. */
export function healthRoutes(router: Router<AppState>): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const [postgres, redisStatus, temporalStatus] = await Promise.all([
      check(() => db().query('SELECT 1')),
      check(() => redis().ping()),
      check(async () => (await temporal()).workflowService.getSystemInfo({})),
    ]);
    const checks = { postgres, redis: redisStatus, temporal: temporalStatus };
    const ready = Object.values(checks).every((s) => s === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', checks };
  });
}
