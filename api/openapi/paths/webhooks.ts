import { WebhookCatalogue, WebhookEventKind } from '../../../domain/webhookCatalogue';
import { json, operation, type Resource } from '../operation';

export const webhooks: Resource = {
  schemas: { WebhookEventKind },
  paths: {
    '/api/v2/webhooks/catalogue': {
      get: operation('get', {
        id: 'getWebhookCatalogue',
        summary: 'List the webhook event types',
        description: 'The live list of webhook event types, each with the resource it carries and the scope it needs (the envelopes are under "Webhook events"). The spec writes the path with a trailing slash; both spellings are served.',
        tag: 'Partner webhooks',
        access: { credential: 'either' },
        responses: { '200': json('The catalogue.', WebhookCatalogue) },
      }),
    },
  },
};
