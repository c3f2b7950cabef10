import { closeRedis } from '../db/redis';
import { closeDb } from '../db/sequelize';
import { logger } from '../domain/logger';
import { parseQueues, startWorkers } from './worker';

/** `npm run start:worker [-- --queues agent-runs,webhooks]`: polls until SIGTERM/SIGINT, then drains. */
async function main(): Promise<void> {
  const queues = parseQueues(process.argv.slice(2));
  const running = await startWorkers(queues);
  logger.info({ queues }, 'worker started');
  // The Temporal runtime shuts workers down on SIGINT/SIGTERM; run() resolves once in-flight tasks finish.
  await running.done;
  await Promise.allSettled([closeDb(), closeRedis()]);
  logger.info('worker stopped');
  // The SDK's native runtime keeps the event loop alive after every worker has stopped.
  process.exit(0);
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
