import { createServer } from 'node:http';
import { config } from '../infra/config';
import { logger } from '../infra/logger';
import { sharesWorkerConnection, temporal } from '../infra/temporalClient';
import { clientWorkerConnection } from '../workers/runsInApi';
import { startWorkers } from '../workers/worker';
import * as activities from './floorActivities';

/**
 * `PORT=… node dist/bench/floorWorker.js <task queue>`: the floor as the run has it, one process that
 * both starts workflows and runs them. Its worker is started by the service's own startWorkers()
 * (same runtime and worker settings) with only the floor's code; each HTTP request starts one
 * floorWorkflow with the service's client module (`?ms=` makes its activity hold that long) and
 * answers 204 once it has completed. With RUNS_IN_API, as the API then does, the client shares the
 * worker's connection and starts eagerly.
 */
async function main(): Promise<void> {
  const taskQueue = process.argv[2];
  if (!taskQueue) throw new Error('usage: floorWorker.js <task queue>');
  const shared = config().runsInApi ? await clientWorkerConnection() : undefined;
  const running = await startWorkers([taskQueue], { workflowsPath: require.resolve('./floorWorkflow'), activities }, shared);
  const client = await temporal();
  const requestEagerStart = sharesWorkerConnection(client);
  let seq = 0;
  createServer((req, res) => {
    // `?ms=5000`: a floor run whose activity holds 5 s, as the burst's runs' provider calls do.
    const ms = Number(new URL(req.url ?? '/', 'http://floor').searchParams.get('ms') ?? 0);
    client.workflow
      .execute('floorWorkflow', { taskQueue, workflowId: `floor-${process.pid}-${++seq}`, requestEagerStart, ...(ms > 0 && { args: [ms] }) })
      .then(
        () => res.writeHead(204).end(),
        (err: Error) => res.writeHead(500).end(err.message),
      );
  }).listen(Number(process.env.PORT), '127.0.0.1');
  await running.done;
  // The SDK's native runtime keeps the event loop alive after the worker has stopped.
  process.exit(0);
}

main().catch((err) => {
  logger.fatal({ err }, 'floor worker failed');
  process.exit(1);
});
