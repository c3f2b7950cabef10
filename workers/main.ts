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
  await closeDb();
  logger.info('worker stopped');
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
