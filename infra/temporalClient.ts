import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type ConnectionLike, type ConnectionOptions } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { config } from './config';
import { dataConverter } from './payloadCodec';

let client: Promise<Client> | undefined;
let workerConnection: ConnectionLike | undefined;
let failFast = false;

/** gRPC's UNAVAILABLE: the frontend could not be reached (a restart, a failover). */
const UNAVAILABLE = 14;
/**
 * Tries of a call the frontend could not take, in the API: about 1.8 s of the SDK's backoff, not its
 * 25 s, so a request made during a Temporal restart is answered 503 with Retry-After within two
 * seconds (api/middleware/errorEnvelope.ts) instead of hanging. Safe to give up on: such a call never
 * reached the server. Requests already waiting for their runs keep waiting (runs/settlements.ts).
 */
const API_UNAVAILABLE_TRIES = 5;

/** Makes the process's client give up on an unreachable Temporal quickly (the API's). Call before the first temporal(). */
export function failFastWhenUnavailable(): void {
  failFast = true;
}

function outageOptions(): Partial<ConnectionOptions> {
  const retries = defaultGrpcRetryOptions();
  return {
    // After a restart the channel reconnects within a second, not after gRPC's growing backoff (up to 2 minutes).
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 1000 },
    ...(failFast && {
      interceptors: [
        makeGrpcRetryInterceptor({
          delayFunction: retries.delayFunction,
          retryableDecider: (attempt, status) => (status.code === UNAVAILABLE ? attempt < API_UNAVAILABLE_TRIES : retries.retryableDecider(attempt, status)),
        }),
      ],
    }),
  };
}

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
    const connection = workerConnection ?? (await Connection.connect({ ...c.temporal, ...outageOptions() }));
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
