import { redis } from './redis';
import { config } from './config';
import { logger } from './logger';
import { payloadOpenFailures } from './metrics';

/**
 * A payload this process cannot open (sealed with a key the ring no longer holds, or with another
 * development key) stops whatever workflow carries it, task after task. That is never quiet: each
 * failure is logged and counted, and the deployment (its Temporal namespace) is marked in Redis for
 * MARK_S, which fails every API instance's readiness check until the failures stop.
 */
const MARK_S = 600;

export const unopenableMark = (namespace = config().temporalNamespace) => `aes:payloads:unopenable:${namespace}`;

let count: () => void = () => payloadOpenFailures.inc();

/** Where a worker counts (its own Prometheus endpoint, the SDK's meter), instead of the API's registry. */
export function countUnopenableWith(counter: () => void): void {
  count = counter;
}

/** `what`: what could not be opened, and what stays stuck until its key is back (a Temporal payload, by default). */
export function reportUnopenable(err: unknown, what = 'a Temporal payload cannot be opened with PAYLOAD_ENCRYPTION_KEYS: the workflow carrying it is stuck until its key is back in the ring'): void {
  count();
  logger.error({ err, namespace: config().temporalNamespace }, what);
  redis()
    .set(unopenableMark(), JSON.stringify({ error: (err as Error).message, at: new Date().toISOString() }), 'EX', MARK_S)
    .catch((redisErr: unknown) => logger.warn({ err: redisErr }, 'could not mark the unopenable payload in Redis'));
}

/** What a readiness check says: the last failure's message while the mark lasts, else undefined. */
export async function unopenableSince(): Promise<string | undefined> {
  return (await redis().get(unopenableMark())) ?? undefined;
}
