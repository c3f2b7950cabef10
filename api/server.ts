import type { Server } from 'node:http';
import { config } from '../domain/config';
import { logger } from '../domain/logger';
import { closeDb } from '../db/sequelize';
import { createApp } from './app';
import { closeRedis } from '../db/redis';
import { closeTemporal } from '../infra/temporalClient';

/** Stops taking connections, lets in-flight requests finish (bounded), then closes the pools. */
async function drain(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
  await Promise.allSettled([closeTemporal(), closeRedis(), closeDb()]);
}

function main(): void {
  const { port } = config();
  const server = createApp().listen(port, () => logger.info({ port }, 'api listening'));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api draining');
    drain(server, Number(process.env.SHUTDOWN_GRACE_MS ?? 30_000)).then(() => {
      logger.info('api stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
