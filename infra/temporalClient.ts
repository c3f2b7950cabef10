import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { config } from './config';
import { dataConverter } from './payloadCodec';

let client: Promise<Client> | undefined;

/**
 * The process's one Temporal client (the API's, and the worker's for schedules and the reconciler); connects on first use.
 * Workflows it starts continue the active trace (a request's span): the interceptor carries it in their headers.
 */
export function temporal(): Promise<Client> {
  client ??= (async () => {
    const c = config();
    const connection = await Connection.connect(c.temporal);
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
  if (pending) await (await pending.catch(() => undefined))?.connection.close();
}
