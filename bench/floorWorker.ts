import { logger } from '../infra/logger';
import { startWorkers } from '../workers/worker';
import * as activities from './floorActivities';

/**
 * `node dist/bench/floorWorker.js <task queue>`: the floor's worker, started by the service's own
 * startWorkers() (same connection, runtime and worker settings) with only the floor's code. It polls
 * until SIGTERM/SIGINT.
 */
async function main(): Promise<void> {
  const taskQueue = process.argv[2];
  if (!taskQueue) throw new Error('usage: floorWorker.js <task queue>');
  const running = await startWorkers([taskQueue], { workflowsPath: require.resolve('./floorWorkflow'), activities });
  await running.done;
  // The SDK's native runtime keeps the event loop alive after the worker has stopped.
  process.exit(0);
}

main().catch((err) => {
  logger.fatal({ err }, 'floor worker failed');
  process.exit(1);
});
