import { Client, Connection, type ConnectionLike } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { config } from './config';
import { dataConverter } from './payloadCodec';

let client: Promise<Client> | undefined;
let workerConnection: ConnectionLike | undefined;

/**
 * Makes the process's client run on a worker's native connection (RUNS_IN_API), so workflows it
 * starts on that worker's queue can be started eagerly. Call before the first temporal(). The client
 * outlives the worker (requests still wait for runs that other workers finish), so closeTemporal(),
 * after the worker has stopped, closes it.
 */
export function useWorkerConnection(connection: ConnectionLike): void {
  if (client) throw new Error('useWorkerConnection() comes before the first temporal()');
  workerConnection = connection;
}

/** Whether this client shares its connection with a worker of this process, so a start may ask to run eagerly there. */
export function sharesWorkerConnection(c: Client): boolean {
  return workerConnection !== undefined && c.connection === workerConnection;
}

/**
 * The process's one Temporal client (the API's, and the worker's for schedules and the reconciler); connects on first use.
 * Workflows it starts continue the active trace (a request's span): the interceptor carries it in their headers.
 */
export function temporal(): Promise<Client> {
  client ??= (async () => {
    const c = config();
    const connection = workerConnection ?? (await Connection.connect(c.temporal));
    return new Client({ connection, namespace: c.temporalNamespace, dataConverter, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } });
  })().catch((err) => {
    client = undefined;
    throw err;
  });
  return client;
}

export async function closeTemporal(): Promise<void> {
  const pending = client;
  client = undefined;
  await (await pending?.catch(() => undefined))?.connection.close();
}
