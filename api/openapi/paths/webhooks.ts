import { EVENT_TYPES } from '../../../domain/events';
import { CUSTOMER_SCOPES } from '../security';
import { boolean, closed, constant, oneOfValues, ref, string } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

export const webhooks: Resource = {
  schemas: {
    WebhookEventKind: closed({
      type: oneOfValues(EVENT_TYPES),
      resource: string({ description: 'What `data.object` is.' }),
      scope: oneOfValues(CUSTOMER_SCOPES, 'The scope the endpoint\'s creating key must hold for the event to be delivered.'),
      preview: boolean({ description: 'Listed with what would trigger it; nothing emits it yet.' }),
      fires_when: string(),
    }),
  },
  paths: {
    '/api/v2/webhooks/catalogue': {
      get: operation('get', {
        id: 'getWebhookCatalogue',
        summary: 'List the webhook event types',
        description: 'The live list of webhook event types, each with the resource it carries and the scope it needs (the envelopes are under "Webhook events"). The spec writes the path with a trailing slash; both spellings are served.',
        tag: 'Partner webhooks',
        access: { credential: 'either' },
        responses: { '200': json('The catalogue.', closed({ object: constant('list'), data: { type: 'array', items: ref('WebhookEventKind') } })) },
      }),
    },
  },
};
