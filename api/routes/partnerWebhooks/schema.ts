import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { DEFAULT_WEBHOOK_API_VERSION, EVENT_TYPES, isEventType, WEBHOOK_API_VERSIONS } from '../../../domain/events';
import { DELIVERY_STATUSES, ENDPOINT_STATUSES } from '../../../domain/webhooks';
import { refined } from '../../../contract/parse';
import { about } from '../../../contract/about';
import { idParam, listQuery, oneOfFilter, idFilter, once } from '../../../contract/listQuery';

/** Larger delivery pages are clamped to this. */
export const MAX_DELIVERY_LIMIT = 100;
/** A recovery window reaches back at most this far: older deliveries' events are still kept, but a partner this far behind re-syncs otherwise. */
export const MAX_RECOVERY_WINDOW_MS = 30 * 24 * 3600_000;

const enabledEvents = yup
  .array(
    yup
      .string()
      .required()
      .test('event', 'enabled_events: unknown event type "${value}"; see GET /api/v2/webhooks/catalogue/', (v) => v === '*' || isEventType(v))
      .meta({ jsonSchema: { enum: ['*', ...EVENT_TYPES] } }),
  )
  .min(1, 'enabled_events must name at least one event type, or "*"')
  .max(EVENT_TYPES.length + 1)
  .meta(about('`*` means all. Repeats are dropped.'));
const description = yup.string().max(500, 'description must be at most 500 characters');

const createEndpoint = yup
  .object({
    url: yup
      .string()
      .required('url is required')
      .max(2048, 'url must be at most 2048 characters')
      .test('url', 'url must be an absolute URL', (v) => URL.canParse(v))
      .meta({ jsonSchema: { format: 'uri' } }),
    enabled_events: enabledEvents.required('enabled_events is required'),
    description,
    api_version: yup
      .string()
      .oneOf(WEBHOOK_API_VERSIONS, `api_version must be one of ${WEBHOOK_API_VERSIONS.join(', ')}`)
      .meta({ jsonSchema: { default: DEFAULT_WEBHOOK_API_VERSION } }),
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict();

const dedupe = (events: string[]) => [...new Set(events)];

/** POST /api/v1/partner/webhooks/endpoints/: `url` (https, public; checked against DNS by the handler), `enabled_events`, `description`, `api_version`. */
export const CreateEndpoint = {
  body: refined(createEndpoint, (b) => ({ url: b.url, enabledEvents: dedupe(b.enabled_events), description: b.description ?? '', apiVersion: b.api_version ?? DEFAULT_WEBHOOK_API_VERSION })),
};

export const EndpointId = { params: idParam('webhookEndpoint', 'a webhook endpoint id (we_…)') };

const updateEndpoint = yup
  .object({
    enabled_events: enabledEvents,
    status: yup
      .string()
      .oneOf(ENDPOINT_STATUSES, `status must be one of ${ENDPOINT_STATUSES.join(', ')}`)
      .meta(about('`active` re-enables a disabled endpoint.')),
    description,
  })
  .noUnknown(true, 'unknown key: ${unknown} (enabled_events, status and description can be changed)')
  .strict()
  // UpdateEndpoint.body's rule: at least one key.
  .meta({ jsonSchema: { minProperties: 1, description: 'At least one of enabled_events, status, description.' } });

/** PATCH …/endpoints/{id}/: any of `enabled_events`, `status` (`active` re-enables a disabled endpoint), `description`. */
export const UpdateEndpoint = {
  ...EndpointId,
  body: refined(updateEndpoint, (b) => {
    if (b.enabled_events === undefined && b.status === undefined && b.description === undefined) throw invalidRequest('Send at least one of enabled_events, status, description.');
    return { enabledEvents: b.enabled_events && dedupe(b.enabled_events), status: b.status as (typeof ENDPOINT_STATUSES)[number] | undefined, description: b.description };
  }),
};

const isoTime = (name: string, description: string) =>
  once(name, { format: 'date-time', description }).test(name, `${name} must be an ISO 8601 time`, (v) => v === undefined || (typeof v === 'string' && !Number.isNaN(Date.parse(v))));

const recoverEndpoint = yup
  .object({ since: isoTime('since', 'The start of the window.').required('since is required'), until: isoTime('until', 'The end of the window; default now.') })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict()
  // RecoverEndpoint.body's rule, relative to now when until is absent: JSON Schema cannot say it.
  .meta(about('`since` must be before `until` (default now), and the window from `since` to `until` is at most 30 days; otherwise a 400.'));

/** POST …/endpoints/{id}/recover: `since` (required) and `until` (default now), ISO 8601, at most 30 days apart. */
export const RecoverEndpoint = {
  ...EndpointId,
  body: refined(recoverEndpoint, (b) => {
    const since = new Date(b.since as string);
    const until = b.until === undefined ? new Date() : new Date(b.until);
    if (since >= until) throw invalidRequest('since must be before until.');
    if (until.getTime() - since.getTime() > MAX_RECOVERY_WINDOW_MS) throw invalidRequest('The window from since to until is at most 30 days.');
    return { since, until };
  }),
};

/** GET /api/v1/partner/webhooks/deliveries/: cursor pages, filtered by `status`, `event_type`, `tenant_ref`, `endpoint`. */
export const ListDeliveries = {
  query: listQuery('delivery', MAX_DELIVERY_LIMIT, {
    status: oneOfFilter('status', DELIVERY_STATUSES),
    event_type: oneOfFilter('event_type', EVENT_TYPES),
    tenant_ref: once('tenant_ref', { maxLength: 200, description: 'The partner\'s own identifier for the merchant.' }).test('tenant_ref', 'tenant_ref must be at most 200 characters', (v) => v === undefined || (typeof v === 'string' && v.length <= 200)),
    endpoint: idFilter('endpoint', 'webhookEndpoint', 'a webhook endpoint id (we_…)'),
  }),
};

export const DeliveryId = { params: idParam('delivery', 'a webhook delivery id (dlv_…)') };
