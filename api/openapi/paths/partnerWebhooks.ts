import { WebhookDelivery, WebhookEndpoint, WebhookEndpointDeleted, WebhookEndpointList, WebhookEndpointWithSecret, WebhookRecovery } from '../../../domain/webhooks';
import { CreateEndpoint, DeliveryId, EndpointId, ListDeliveries, RecoverEndpoint, UpdateEndpoint } from '../../routes/partnerWebhooks/schema';
import { cursorList } from '../components';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const BASE = '/api/v1/partner/webhooks';
const reads = { credential: 'partner', scopes: ['webhooks:read'] } as const;
const writes = { credential: 'partner', scopes: ['webhooks:write'] } as const;
const SLASH = 'The spec writes partner paths with a trailing slash; both spellings are served.';

export const partnerWebhooks: Resource = {
  schemas: { WebhookEndpoint, WebhookEndpointWithSecret, WebhookDelivery },
  paths: {
    [`${BASE}/endpoints`]: {
      post: operation('post', {
        id: 'createWebhookEndpoint',
        summary: 'Register a webhook endpoint',
        description: `\`url\` must be https and resolve only to public addresses (private, loopback and link-local are refused with a 400). What it receives is bounded by the scopes of the key that creates it. At most 10 endpoints per partner. ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: CreateEndpoint,
        responses: { '201': json('The endpoint, with its secret (shown this once).', ref('WebhookEndpointWithSecret')) },
        errors: ['webhook_endpoint_limit_reached'],
      }),
      get: operation('get', {
        id: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        description: SLASH,
        tag: 'Partner webhooks',
        access: reads,
        responses: { '200': json('Every endpoint of the partner (never a secret).', WebhookEndpointList) },
      }),
    },
    [`${BASE}/endpoints/{id}`]: {
      get: operation('get', {
        id: 'getWebhookEndpoint',
        summary: 'Read a webhook endpoint',
        description: `Another partner's endpoint answers like a missing one. ${SLASH}`,
        tag: 'Partner webhooks',
        access: reads,
        request: EndpointId,
        responses: { '200': json('The endpoint.', ref('WebhookEndpoint')) },
        errors: ['webhook_endpoint_not_found'],
      }),
      patch: operation('patch', {
        id: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint',
        description: `Any of \`enabled_events\`, \`status\` (\`active\` re-enables a disabled endpoint), \`description\`; at least one. ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: UpdateEndpoint,
        responses: { '200': json('The endpoint.', ref('WebhookEndpoint')) },
        errors: ['webhook_endpoint_not_found'],
      }),
      delete: operation('delete', {
        id: 'deleteWebhookEndpoint',
        summary: 'Remove a webhook endpoint',
        description: `Its deliveries stay listed. ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: EndpointId,
        responses: { '200': json('Removed.', WebhookEndpointDeleted) },
        errors: ['webhook_endpoint_not_found'],
      }),
    },
    [`${BASE}/endpoints/{id}/rotate-secret`]: {
      post: operation('post', {
        id: 'rotateWebhookSecret',
        summary: 'Rotate an endpoint\'s secret',
        description: `Issues a new secret; the old one keeps signing for 24 hours (deliveries carry both signatures). ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: EndpointId,
        responses: { '200': json('The endpoint with its new secret (shown this once).', ref('WebhookEndpointWithSecret')) },
        errors: ['webhook_endpoint_not_found'],
      }),
    },
    [`${BASE}/endpoints/{id}/recover`]: {
      post: operation('post', {
        id: 'recoverWebhookDeliveries',
        summary: 'Send a window of failed deliveries again',
        description: `Every \`failed\` or \`skipped\` delivery to the endpoint from \`since\` to \`until\` (default now; at most 30 days apart) is sent again by a workflow (the answer's id). The endpoint must be active. ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: RecoverEndpoint,
        responses: {
          '202': json('The recovery, queued.', WebhookRecovery),
        },
        errors: ['webhook_endpoint_not_found', 'webhook_endpoint_disabled'],
      }),
    },
    [`${BASE}/deliveries`]: {
      get: operation('get', {
        id: 'listWebhookDeliveries',
        summary: 'List recent deliveries',
        description: `Newest first, each with \`tenant_ref\`. Merchants cannot see, list or replay them. ${SLASH}`,
        tag: 'Partner webhooks',
        access: reads,
        request: ListDeliveries,
        responses: { '200': json('A page of deliveries.', cursorList(ref('WebhookDelivery'))) },
      }),
    },
    [`${BASE}/deliveries/{id}`]: {
      get: operation('get', {
        id: 'getWebhookDelivery',
        summary: 'Read a delivery',
        description: SLASH,
        tag: 'Partner webhooks',
        access: reads,
        request: DeliveryId,
        responses: { '200': json('The delivery with every attempt.', ref('WebhookDelivery')) },
        errors: ['webhook_delivery_not_found'],
      }),
    },
    [`${BASE}/deliveries/{id}/resend`]: {
      post: operation('post', {
        id: 'resendWebhookDelivery',
        summary: 'Resend a delivery',
        description: `Attempted anew (attempts numbered on), signed with the current secrets. A delivery still being attempted is 409 \`webhook_delivery_in_progress\`; to a disabled or deleted endpoint, 409 \`webhook_endpoint_disabled\`. ${SLASH}`,
        tag: 'Partner webhooks',
        access: writes,
        request: DeliveryId,
        responses: { '202': json('The delivery, `pending` again.', ref('WebhookDelivery')) },
        errors: ['webhook_delivery_not_found', 'webhook_endpoint_disabled', 'webhook_delivery_in_progress'],
      }),
    },
  },
};
