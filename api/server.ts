import type { Server } from 'node:http';
import { config, DEVELOPMENT_SIGNING_SECRET } from '../infra/config';
import { logger } from '../infra/logger';
import { closeDb } from '../db/sequelize';
import { closeRedis } from '../db/redis';
import { closeTemporal } from '../infra/temporalClient';
import { stopTracing } from '../infra/tracing';
import { createApp } from './app';
import { beginShutdown, endStreams } from './shutdown';

/**
 * A deploy's SIGTERM, in the order a load balancer needs: readiness fails at once; after
 * SHUTDOWN_DELAY_MS (the balancer has noticed) the listener closes and open event streams end
 * without cancelling their runs (clients resume elsewhere with Last-Event-ID); in-flight requests
 * get SHUTDOWN_GRACE_MS to finish; then the pools close and batched spans are exported. No run is
 * cancelled by any of it.
 */
async function drain(server: Server, delayMs: number, graceMs: number): Promise<void> {
  beginShutdown();
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  endStreams();
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
  await Promise.allSettled([closeTemporal(), closeRedis(), closeDb(), stopTracing()]);
}

function main(): void {
  const { port, shutdownDelayMs, shutdownGraceMs, signingSecret } = config();
  if (signingSecret === DEVELOPMENT_SIGNING_SECRET) logger.warn('SIGNING_SECRET is not set: document grants and tool signatures use a development secret anyone can read; set one in production');
  const server = createApp().listen(port, () => logger.info({ port }, 'api listening'));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api draining');
    drain(server, shutdownDelayMs, shutdownGraceMs).then(() => {
      logger.info('api stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
