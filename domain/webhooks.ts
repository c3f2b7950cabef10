import { EVENT_TYPES, type EventType } from './events';
import { closed, constant, deletion, integer, list, matching, oneOfValues, orNull, publicId, ref, text, timestamp, uri, type Static } from './shape';

/** Partner webhook endpoints and deliveries as the API shows them, and how an attempt's answer is judged. */

export const ENDPOINT_STATUSES = ['active', 'disabled'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'skipped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A partner keeps at most this many endpoints (the spec's partner has one; a second helps move URLs). */
export const MAX_ENDPOINTS_PER_PARTNER = 10;

/** The spec's delivery timeout. */
export const DELIVERY_TIMEOUT_MS = 5_000;
/** Of a receiver's answer only this much is kept, for the attempt's error. */
export const MAX_ANSWER_BYTES = 1024;

/** How long a secret rotated out keeps signing (spec: 24 hours). */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3600_000;
/** At most this many rotated-out secrets sign beside the current one (the newest; rotating more often drops the oldest). */
export const MAX_PREVIOUS_SECRETS = 5;

export interface EndpointView {
  publicId: string;
  url: string;
  status: EndpointStatus;
  apiVersion: string;
  enabledEvents: string[];
  /** What the creating key's scopes let it receive: deliveries never go beyond these. */
  permittedEvents: string[];
  description: string;
  secretHint: string;
  previousSecretUntil: Date | null;
  disabledReason: string | null;
  createdAt: Date;
}

const endpointFields = {
  id: publicId('webhookEndpoint'),
  object: constant('webhook_endpoint'),
  url: uri(),
  status: oneOfValues(ENDPOINT_STATUSES),
  api_version: text('Fixed per endpoint.'),
  enabled_events: list(text()),
  permitted_events: list(oneOfValues(EVENT_TYPES), { description: "What the creating key's scopes let it receive: deliveries never go beyond these." }),
  description: text(),
  secret_hint: text('The last four characters of the secret.'),
  previous_secret_expires_at: orNull(timestamp('Until when a rotated-out secret still signs.')),
  disabled_reason: orNull(text()),
  created_at: timestamp(),
};

/** A partner's webhook endpoint: its shape, declared once for the view and the OpenAPI document. */
export const WebhookEndpoint = closed(endpointFields);
/** The endpoint with its secret, where the spec returns it (creation and rotation), once. */
export const WebhookEndpointWithSecret = closed({ ...endpointFields, secret: matching('^whsec_', 'Returned only here, once.') });

/** The endpoint record; `secret` only where the spec returns it (creation and rotation). */
export function endpointObject(e: EndpointView): Static<typeof WebhookEndpoint>;
export function endpointObject(e: EndpointView, secret: string): Static<typeof WebhookEndpointWithSecret>;
export function endpointObject(e: EndpointView, secret?: string): Static<typeof WebhookEndpoint> | Static<typeof WebhookEndpointWithSecret> {
  return {
    id: e.publicId,
    object: 'webhook_endpoint',
    url: e.url,
    status: e.status,
    api_version: e.apiVersion,
    enabled_events: e.enabledEvents,
    permitted_events: e.permittedEvents as EventType[],
    description: e.description,
    secret_hint: e.secretHint,
    ...(secret !== undefined && { secret }),
    previous_secret_expires_at: e.previousSecretUntil?.toISOString() ?? null,
    disabled_reason: e.disabledReason,
    created_at: e.createdAt.toISOString(),
  };
}

/** Every endpoint of the partner, in one page (a partner has a handful). */
export const WebhookEndpointList = closed({ object: constant('list'), data: list(ref<Static<typeof WebhookEndpoint>>('WebhookEndpoint')), has_more: constant(false) });

export function endpointList(endpoints: EndpointView[]): Static<typeof WebhookEndpointList> {
  return { object: 'list', data: endpoints.map((e) => endpointObject(e)), has_more: false };
}

/** A removed endpoint, as DELETE answers it. */
export const WebhookEndpointDeleted = deletion('webhookEndpoint', 'webhook_endpoint');

export function endpointDeleted(id: string): Static<typeof WebhookEndpointDeleted> {
  return { id, object: 'webhook_endpoint', deleted: true };
}

/** A recovery of an endpoint's failed deliveries, as queued. */
export const WebhookRecovery = closed({ id: publicId('recovery'), object: constant('webhook_recovery'), endpoint: publicId('webhookEndpoint'), since: timestamp(), until: timestamp(), status: constant('queued') });

export function recoveryObject(r: { id: string; endpoint: string; since: Date; until: Date }): Static<typeof WebhookRecovery> {
  return { id: r.id, object: 'webhook_recovery', endpoint: r.endpoint, since: r.since.toISOString(), until: r.until.toISOString(), status: 'queued' };
}

export interface DeliveryView {
  public_id: string;
  event_type: string;
  event_id: string;
  endpoint: string;
  tenant: string;
  tenant_ref: string | null;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  completed_at: Date | null;
  attempt_log: { attempt: number; status_code: number | null; latency_ms: number; error: string | null; held_ms: number; attempted_at: string }[];
}

/** A delivery: its shape, declared once for the view and the OpenAPI document. */
export const WebhookDelivery = closed({
  id: publicId('delivery'),
  object: constant('webhook_delivery'),
  endpoint: publicId('webhookEndpoint'),
  event: closed({ id: publicId('event'), type: oneOfValues(EVENT_TYPES) }),
  tenant: publicId('workspace'),
  tenant_ref: text("The partner's own identifier for the merchant (empty when it has none)."),
  status: oneOfValues(DELIVERY_STATUSES),
  attempts: integer({ minimum: 0 }),
  last_status_code: orNull(integer()),
  last_latency_ms: orNull(integer()),
  last_error: orNull(text()),
  attempt_log: list(
    closed({ attempt: integer({ minimum: 1 }), status_code: orNull(integer()), latency_ms: integer({ minimum: 0 }), error: orNull(text()), held_ms: integer({ minimum: 0 }), attempted_at: timestamp() }),
  ),
  created_at: timestamp(),
  last_attempt_at: orNull(timestamp()),
  completed_at: orNull(timestamp()),
});

/** A delivery as the partner sees it: which event, which merchant, and every attempt with its status code and latency. */
export function deliveryObject(d: DeliveryView): Static<typeof WebhookDelivery> {
  return {
    id: d.public_id,
    object: 'webhook_delivery',
    endpoint: d.endpoint,
    event: { id: d.event_id, type: d.event_type as EventType },
    tenant: d.tenant,
    tenant_ref: d.tenant_ref ?? '',
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_latency_ms: d.last_latency_ms,
    last_error: d.last_error,
    attempt_log: d.attempt_log,
    created_at: d.created_at.toISOString(),
    last_attempt_at: d.last_attempt_at?.toISOString() ?? null,
    completed_at: d.completed_at?.toISOString() ?? null,
  };
}

/** What one attempt's answer means for the delivery. */
export type AttemptVerdict =
  | { kind: 'delivered' }
  /** A 4xx (other than 429), or a target refused at connection time: retrying cannot help. */
  | { kind: 'rejected' }
  /** 5xx, 429, timeout, connection failure: the next attempt in the schedule, not before retryAfterMs. */
  | { kind: 'retry'; retryAfterMs?: number };

/** `Retry-After` as seconds or an HTTP date, in milliseconds from `now`. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function judgeAnswer(status: number, retryAfter: string | undefined, now: number): AttemptVerdict {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 429 || status === 503) return { kind: 'retry', retryAfterMs: retryAfterMs(retryAfter, now) };
  if (status >= 400 && status < 500) return { kind: 'rejected' };
  return { kind: 'retry' };
}
