import { NativeConnection } from '@temporalio/worker';
import { config } from '../infra/config';
import { useWorkerConnection } from '../infra/temporalClient';
import { RUN_QUEUE } from '../workflowClients/agentRun.options';
import { installRuntime, startWorkers, type RunningWorkers } from './worker';

/**
 * RUNS_IN_API: the API process also runs an agent-runs worker, on the native connection its client
 * uses. A run it starts asks to start eagerly: Temporal hands the first workflow task back in the
 * start response to this worker (no matching round trip), and with eager activities the first
 * activity comes back in that task's completion. Dedicated workers keep polling the same queue: a
 * run whose API has no free slot, or whose worker goes away, continues there.
 */
export async function hostRuns(): Promise<RunningWorkers> {
  return startWorkers([RUN_QUEUE], undefined, await clientWorkerConnection());
}

/** A native connection that this process's client (temporal()) and a worker of this process share. */
export async function clientWorkerConnection(): Promise<NativeConnection> {
  installRuntime();
  const connection = await NativeConnection.connect(config().temporal);
  useWorkerConnection(connection);
  return connection;
}
