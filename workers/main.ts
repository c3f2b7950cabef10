import { closeRedis } from '../infra/redis';
import { closeDb } from '../db/sequelize';
import { logger } from '../infra/logger';
import { checkStartup } from '../infra/startupChecks';
import { closeTemporal } from '../infra/temporalClient';
import { stopTracing } from '../infra/tracing';
import { parseQueues, startWorkers } from './worker';

/**
 * Polls the queues until SIGTERM/SIGINT, then drains: the Temporal runtime shuts the workers down on
 * those signals, they stop polling, and done resolves once their in-flight tasks have finished (within
 * WORKER_SHUTDOWN_GRACE_MS). Then the pools close, batched spans are exported, and the process exits.
 */
export async function serveUntilSignalled(queues: readonly string[], onStarted?: () => void): Promise<never> {
  // Before anything connects: no secret anyone can read outside DEVELOPMENT_MODE.
  checkStartup('worker');
  const running = await startWorkers(queues);
  logger.info({ queues }, 'worker started');
  onStarted?.();
  await running.done;
  await Promise.allSettled([closeDb(), closeRedis(), closeTemporal(), stopTracing()]);
  logger.info('worker stopped');
  // The SDK's native runtime keeps the event loop alive after every worker has stopped.
  process.exit(0);
}

/** `npm run start:worker [-- --queues agent-runs,webhooks]`. */
if (require.main === module) {
  serveUntilSignalled(parseQueues(process.argv.slice(2))).catch((err) => {
    logger.fatal({ err }, 'worker failed');
    process.exit(1);
  });
}
