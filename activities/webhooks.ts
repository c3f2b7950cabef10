import { randomBytes } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { LRUCache } from 'lru-cache';
import { now } from '../domain/clock';
import { DELIVERY_TIMEOUT_MS, judgeAnswer, MAX_ANSWER_BYTES, type AttemptVerdict, type DeliveryStatus } from '../domain/webhooks';
import { serviceSignature, standardSignature } from '../domain/webhookSignatures';
import { deliveryForAttempt, recordAttempt, skipDelivery, type DeliveryForAttempt, type FailurePolicy } from '../db/webhookDeliveries';
import { signingSecrets } from '../db/webhookEndpoints';
import { config } from '../infra/config';
import { logger } from '../infra/logger';
import { reportUnopenable } from '../infra/unopenablePayloads';
import { postToTarget, TargetRefused } from '../infra/outboundTarget';
import { admitDelivery } from './deliveryRate';
import { heartbeating } from './bounded';
import { untilAvailable } from './untilAvailable';

/** `superseded`: a resend took the delivery over, or another run finished it: this run stops, attempting nothing more. */
export type AttemptOutcome = AttemptVerdict | { kind: 'skipped' } | { kind: 'superseded' };

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The headers of one attempt: the spec's X-Service-* set, the Standard Webhooks set (same secrets),
 * and a W3C `traceparent` continuing the event's trace. Signed at the service clock's `now()`.
 */
export function deliveryHeaders(d: DeliveryForAttempt, body: string, attempt: number): Record<string, string> {
  const at = now();
  const signed = { id: d.publicId, timestamp: Math.floor(at / 1000), body };
  const secrets = secretsOf(d, at);
  const traceId = (d.envelope.correlation as { trace_id?: string } | undefined)?.trace_id ?? '';
  return {
    'content-type': 'application/json',
    'user-agent': 'AgentExecutionService-Webhooks/1',
    'x-service-signature': serviceSignature(secrets, signed),
    'x-service-event': d.eventType,
    'x-service-event-id': d.eventPublicId,
    'x-service-delivery-id': d.publicId,
    'x-service-attempt': String(attempt),
    'x-service-api-version': d.apiVersion,
    'webhook-id': d.publicId,
    'webhook-timestamp': String(signed.timestamp),
    'webhook-signature': standardSignature(secrets, signed),
    ...(TRACE_ID.test(traceId) && { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }),
  };
}

/**
 * The endpoint's signing secrets. A current one that no key of the ring opens is loud, and the attempt
 * is retried until its key is back or the secret is rotated. A rotated-out one no key opens (the ring
 * was replaced, then the secret rotated: the documented remedy) is lost: the delivery is signed with
 * the rest, and the loss is said once per process, not at every delivery.
 */
function secretsOf(d: DeliveryForAttempt, at: number): string[] {
  let signing: ReturnType<typeof signingSecrets>;
  try {
    signing = signingSecrets(d, at);
  } catch (err) {
    reportUnopenable(err, `webhook endpoint ${d.endpointPublicId}'s secret cannot be opened with PAYLOAD_ENCRYPTION_KEYS: its deliveries cannot be signed until the key that sealed it is back in the ring, or its secret is rotated`);
    throw err;
  }
  for (const until of signing.lost) {
    const lost = `${d.endpointPublicId}:${until}`;
    if (saidLost.has(lost)) continue;
    saidLost.set(lost, true);
    logger.warn({ endpoint: d.endpointPublicId, signedUntil: until }, 'webhook endpoint secret rotated out cannot be opened with PAYLOAD_ENCRYPTION_KEYS: it is lost, and deliveries are signed with the secrets that open (the current one)');
  }
  return signing.secrets;
}

/** The lost secrets this process has already named (endpoint and end of signing): each is said once. */
const saidLost = new LRUCache<string, true>({ max: 10_000 });

/** The body: the outbox's envelope, in the endpoint's fixed api_version. The same bytes are signed and sent. */
function deliveryBody(d: DeliveryForAttempt): string {
  return JSON.stringify({ ...d.envelope, api_version: d.apiVersion });
}

interface Sent {
  verdict: AttemptVerdict;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

async function send(d: DeliveryForAttempt, attempt: number): Promise<Sent> {
  const body = deliveryBody(d);
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const answer = await postToTarget(new URL(d.url), body, deliveryHeaders(d, body, attempt), { timeoutMs: DELIVERY_TIMEOUT_MS, maxAnswerBytes: MAX_ANSWER_BYTES });
    const verdict = judgeAnswer(answer.status, answer.headers['retry-after'] as string | undefined, Date.now());
    const error = verdict.kind === 'delivered' ? null : `HTTP ${answer.status}${answer.text ? `: ${answer.text.slice(0, 200)}` : ''}`;
    return { verdict, statusCode: answer.status, latencyMs: latency(), error };
  } catch (err) {
    // A non-public address at connection time (DNS rebinding) is final; anything else (timeout, refused connection) is retried.
    return { verdict: err instanceof TargetRefused ? { kind: 'rejected' } : { kind: 'retry' }, statusCode: null, latencyMs: latency(), error: (err as Error).message };
  }
}

const STATUS_AFTER: Record<AttemptVerdict['kind'], DeliveryStatus> = { delivered: 'succeeded', rejected: 'failed', retry: 'pending' };
const RECORDED: Record<Exclude<DeliveryStatus, 'pending'>, AttemptOutcome> = { succeeded: { kind: 'delivered' }, failed: { kind: 'rejected' }, skipped: { kind: 'skipped' } };

/**
 * One attempt: POSTs the event, signed, with a 5 s timeout, and records the attempt (status code,
 * latency, error), the delivery's state and the endpoint's failure streak together. A disabled or
 * removed endpoint is not attempted: the delivery is skipped (a disabled endpoint's can be recovered).
 */
export function attemptDelivery(a: { deliveryId: string; generation: number; attempt: number; last: boolean; heldMs: number }): Promise<AttemptOutcome> {
  return heartbeating(() => attempt(a));
}

async function attempt(a: { deliveryId: string; generation: number; attempt: number; last: boolean; heldMs: number }): Promise<AttemptOutcome> {
  const d = await untilAvailable(() => deliveryForAttempt(a.deliveryId));
  if (!d) throw new Error(`delivery ${a.deliveryId} is not recorded`);
  if (d.generation !== a.generation) return stopped('superseded', d, a.attempt, { kind: 'superseded' });
  if (d.status !== 'pending') {
    // This very attempt recorded (the activity retried after its commit): the outcome it had, as it was.
    if (d.attempts >= a.attempt) return RECORDED[d.status];
    return stopped('not_pending', d, a.attempt, RECORDED[d.status]);
  }
  if (d.endpointDeleted || d.endpointStatus !== 'active') {
    await skipDelivery(d.publicId, d.generation);
    return { kind: 'skipped' };
  }
  const sent = await send(d, a.attempt);
  const status = sent.verdict.kind === 'retry' && a.last ? 'failed' : STATUS_AFTER[sent.verdict.kind];
  // Sent: a database outage now is waited out (the attempt heartbeats), so the event is not sent again.
  const disabled = await untilAvailable(() =>
    recordAttempt(
      { deliveryId: d.id, endpointId: d.endpointId, generation: d.generation, attempt: a.attempt, statusCode: sent.statusCode, latencyMs: sent.latencyMs, error: sent.error, heldMs: a.heldMs, delivered: sent.verdict.kind === 'delivered', status },
      failurePolicy(),
    ),
  );
  Context.current().metricMeter.createCounter('aes_webhook_attempts', 'attempts', 'Webhook delivery attempts, by outcome (delivered, rejected, retry).').add(1, { outcome: sent.verdict.kind });
  // Finished or reopened while this attempt was on its way: the attempt was made, but the delivery's record is another run's.
  if (disabled === undefined) return stopped('finished_meanwhile', d, a.attempt, { kind: 'superseded' });
  if (disabled) logger.warn({ endpoint: d.endpointPublicId, delivery: d.publicId }, 'webhook endpoint disabled: every attempt failed for the configured period');
  return sent.verdict;
}

/**
 * A delivery run that stops short of its attempt, because the delivery is no longer this run's to
 * send (a resend superseded it, or it was finished by another run), says so: a log line and a count.
 */
function stopped(reason: 'superseded' | 'not_pending' | 'finished_meanwhile', d: DeliveryForAttempt, attempt: number, outcome: AttemptOutcome): AttemptOutcome {
  logger.warn({ delivery: d.publicId, generation: d.generation, status: d.status, attempt, reason }, 'webhook delivery run stopped: the delivery is no longer pending in its generation');
  Context.current().metricMeter.createCounter('aes_webhook_runs_stopped', 'runs', 'Webhook delivery runs stopped because their delivery was no longer pending in their generation, by reason.').add(1, { reason });
  return outcome;
}

/**
 * An endpoint is disabled when every attempt has failed for the configured period; a gap without
 * failures twice the schedule's longest (at least a minute) ends a streak.
 */
function failurePolicy(): FailurePolicy {
  const c = config().webhooks;
  return { disableAfterS: c.disableAfterS, streakGapS: Math.max(60, Math.ceil((2 * (c.retryDelaysMs.at(-1) ?? 0)) / 1000)) };
}

/** Partner and merchant of a delivery, and the partner's rate, cached briefly: a held delivery asks again. */
const admissionOf = new LRUCache<string, { partnerId: number; merchantId: number; ratePerSecond: number }>({ max: 10_000, ttl: 10_000 });

/** 0 when the partner's rate admits an attempt of this delivery now; otherwise how long to wait for its turn. */
export async function admitDeliveryAttempt(deliveryId: string): Promise<number> {
  let who = admissionOf.get(deliveryId);
  if (!who) {
    const d = await deliveryForAttempt(deliveryId);
    if (!d) return 0;
    who = { partnerId: d.partnerId, merchantId: d.workspaceId, ratePerSecond: d.partnerRate ?? config().webhooks.partnerRate };
    admissionOf.set(deliveryId, who);
  }
  return admitDelivery({ ...who, deliveryId });
}
