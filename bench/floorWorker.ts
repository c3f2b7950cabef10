import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

/** The floor's one activity does nothing, so what the floor measures is Temporal's own cost. */
export async function noop(): Promise<void> {}

/**
 * `node dist/bench/floorWorker.js <task queue>`: a worker built like workers/worker.ts's (one
 * NativeConnection, the same namespace, a webpack bundle, Worker.create with default concurrency
 * and cache), but whose bundle holds only the floor workflow. It polls until SIGTERM/SIGINT.
 */
async function main(): Promise<void> {
  const taskQueue = process.argv[2];
  if (!taskQueue) throw new Error('usage: floorWorker.js <task queue>');
  // As workers/worker.ts: the SDK logs at warning level and above only.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./floorWorkflow'), logger: new DefaultLogger('WARN') });
  const worker = await Worker.create({ connection, namespace: process.env.TEMPORAL_NAMESPACE || 'default', taskQueue, workflowBundle, activities: { noop } });
  await worker.run();
  await connection.close();
  // The SDK's native runtime keeps the event loop alive after the worker has stopped.
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`floor worker failed: ${err?.stack ?? err}\n`);
  process.exit(1);
});
