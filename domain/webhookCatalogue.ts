import { EVENT_CATALOGUE, EVENT_TYPES } from './events';
import { CUSTOMER_SCOPES } from './scopes';
import { boolean, closed, constant, list, oneOfValues, ref, text, type Static } from './shape';

/** One webhook event type as the catalogue lists it: its shape, declared once for the view and the OpenAPI document. */
export const WebhookEventKind = closed({
  type: oneOfValues(EVENT_TYPES),
  resource: text('What `data.object` is.'),
  scope: oneOfValues(CUSTOMER_SCOPES, "The scope the endpoint's creating key must hold for the event to be delivered."),
  preview: boolean('Listed with what would trigger it; nothing emits it yet.'),
  fires_when: text(),
});

export const WebhookCatalogue = closed({ object: constant('list'), data: list(ref<Static<typeof WebhookEventKind>>('WebhookEventKind')) });

/** Every event type, the resource it carries, the scope it needs, whether it is in preview. */
export const WEBHOOK_CATALOGUE: Static<typeof WebhookCatalogue> = {
  object: 'list',
  data: EVENT_TYPES.map((type) => ({ type, ...EVENT_CATALOGUE[type] })),
};
