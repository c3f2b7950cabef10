import type { Server } from 'node:http';
import { config } from '../infra/config';
import { logger } from '../infra/logger';
import { checkStartup } from '../infra/startupChecks';
import { closeDb } from '../db/sequelize';
import { closeRedis } from '../infra/redis';
import { closeTemporal } from '../infra/temporalClient';
import { stopTracing } from '../infra/tracing';
import type { RunningWorkers } from '../workers/worker';
import { createApp } from './app';
import { beginShutdown, endStreams } from '../runs/shutdown';

/**
 * A deploy's SIGTERM, in the order a load balancer needs: readiness fails at once; after
 * SHUTDOWN_DELAY_MS (the balancer has noticed) the listener closes and open event streams end
 * without cancelling their runs (clients resume elsewhere with Last-Event-ID); in-flight requests
 * get SHUTDOWN_GRACE_MS to finish; then the pools close and batched spans are exported. No run is
 * cancelled by any of it. A hosted run worker (RUNS_IN_API) stops polling at the signal (the Temporal
 * runtime sees it too) and finishes its in-flight activities before the connection closes.
 */
async function drain(server: Server, delayMs: number, graceMs: number, runs?: RunningWorkers): Promise<void> {
  beginShutdown();
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  endStreams();
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
  await runs?.shutdown();
  await Promise.allSettled([closeTemporal(), closeRedis(), closeDb(), stopTracing()]);
}

async function main(): Promise<void> {
  // Before anything listens or connects: no secret anyone can read outside DEVELOPMENT_MODE.
  checkStartup('api');
  const { port, shutdownDelayMs, shutdownGraceMs, runsInApi } = config();
  // Loaded only in this mode: a plain API process carries no worker code.
  const runs = runsInApi ? await (await import('../workers/runsInApi')).hostRuns() : undefined;
  const server = createApp().listen(port, () => logger.info({ port }, 'api listening'));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api draining');
    drain(server, shutdownDelayMs, shutdownGraceMs, runs).then(() => {
      logger.info('api stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  logger.fatal({ err }, 'api failed to start');
  process.exit(1);
});
