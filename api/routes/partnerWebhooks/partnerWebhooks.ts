import Router from '@koa/router';
import type { Context } from 'koa';
import { now } from '../../../domain/clock';
import { ServiceError, invalidRequest } from '../../../domain/errors';
import { permittedEvents } from '../../../domain/events';
import { mintId } from '../../../domain/ids';
import { deliveryObject, endpointDeleted, endpointList, endpointObject, MAX_ENDPOINTS_PER_PARTNER, PREVIOUS_SECRET_VALID_MS, recoveryObject } from '../../../domain/webhooks';
import { mintSecret, secretHint } from '../../../domain/webhookSignatures';
import { deliveryPage, findDelivery, reopenDeliveries, reopenStranded } from '../../../db/webhookDeliveries';
import { deleteEndpoint, findEndpoint, insertEndpoint, listEndpoints, rotateSecret, updateEndpoint, type EndpointRow } from '../../../db/webhookEndpoints';
import { checkTarget, TargetRefused } from '../../../infra/outboundTarget';
import { temporal } from '../../../infra/temporalClient';
import { deliveryRunning } from '../../../workflowClients/webhookDelivery.client';
import { startRecovery } from '../../../workflowClients/webhookRecovery.client';
import { listPage } from '../listPage';
import { authorize, partnerOf } from '../../middleware/auth';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateEndpoint, DeliveryId, EndpointId, ListDeliveries, RecoverEndpoint, UpdateEndpoint } from './schema';

type Ctx = Context & { state: AppState };

const BASE = '/api/v1/partner/webhooks';

/** The caller's endpoint named in the path; another partner's answers exactly like a missing one. */
async function endpointOf(ctx: Ctx & { state: { input: { params: { id: string } } } }): Promise<EndpointRow> {
  const endpoint = await findEndpoint(partnerOf(ctx.state.principal).id, ctx.state.input.params.id);
  if (!endpoint) throw notFound('webhook_endpoint_not_found');
  return endpoint;
}

function requireActive(endpoint: EndpointRow): void {
  if (endpoint.status !== 'active') throw new ServiceError('webhook_endpoint_disabled', 'This endpoint is disabled; re-enable it with PATCH {"status":"active"} first.');
}

/**
 * Partner webhook management (spec "Partner webhook endpoints (v1 paths)"): partner credentials only.
 * A workspace key is refused on every path, so merchants never see, list or replay a partner's deliveries.
 */
export function partnerWebhooksRoutes(router: Router<AppState>): void {
  const reads = { scopes: ['webhooks:read'], credential: 'partner' } as const;
  const writes = { scopes: ['webhooks:write'], credential: 'partner' } as const;

  router.post<{ input: Input<typeof CreateEndpoint> }>(
    `${BASE}/endpoints`,
    validate(CreateEndpoint),
    authorize({ ...writes, endpoint: 'webhook_endpoints_create' }),
    async (ctx) => {
      const { body } = ctx.state.input;
      const principal = ctx.state.principal!;
      const url = new URL(body.url);
      try {
        await checkTarget(url);
      } catch (err) {
        if (err instanceof TargetRefused) throw invalidRequest(`url is refused: ${err.message}. Webhook endpoints must be https and publicly resolvable.`);
        throw err;
      }
      const secret = mintSecret();
      const endpoint = await insertEndpoint(
        {
          publicId: mintId('webhookEndpoint'),
          partnerId: partnerOf(principal).id,
          url: url.href,
          description: body.description,
          apiVersion: body.apiVersion,
          enabledEvents: body.enabledEvents,
          permittedEvents: permittedEvents(principal.scopes),
          // partnerOf() admitted a partner key: sessions are a workspace member's, never a partner's
          createdByKey: principal.keyKey!,
          secret,
          secretHint: secretHint(secret),
        },
        MAX_ENDPOINTS_PER_PARTNER,
      );
      if (!endpoint) throw new ServiceError('webhook_endpoint_limit_reached', `A partner has at most ${MAX_ENDPOINTS_PER_PARTNER} webhook endpoints; delete one first.`);
      ctx.status = 201;
      ctx.body = endpointObject(endpoint, secret);
    },
  );

  router.get(`${BASE}/endpoints`, authorize({ ...reads, endpoint: 'webhook_endpoints_list' }), async (ctx) => {
    const endpoints = await listEndpoints(partnerOf(ctx.state.principal).id);
    ctx.body = endpointList(endpoints);
  });

  router.get<{ input: Input<typeof EndpointId> }>(`${BASE}/endpoints/:id`, validate(EndpointId), authorize({ ...reads, endpoint: 'webhook_endpoints_read' }), async (ctx) => {
    ctx.body = endpointObject(await endpointOf(ctx));
  });

  router.patch<{ input: Input<typeof UpdateEndpoint> }>(
    `${BASE}/endpoints/:id`,
    validate(UpdateEndpoint),
    authorize({ ...writes, endpoint: 'webhook_endpoints_update' }),
    async (ctx) => {
      const updated = await updateEndpoint(partnerOf(ctx.state.principal).id, ctx.state.input.params.id, ctx.state.input.body);
      if (!updated) throw notFound('webhook_endpoint_not_found');
      ctx.body = endpointObject(updated);
    },
  );

  router.delete<{ input: Input<typeof EndpointId> }>(`${BASE}/endpoints/:id`, validate(EndpointId), authorize({ ...writes, endpoint: 'webhook_endpoints_delete' }), async (ctx) => {
    if (!(await deleteEndpoint(partnerOf(ctx.state.principal).id, ctx.state.input.params.id))) throw notFound('webhook_endpoint_not_found');
    ctx.body = endpointDeleted(ctx.state.input.params.id);
  });

  router.post<{ input: Input<typeof EndpointId> }>(
    `${BASE}/endpoints/:id/rotate-secret`,
    validate(EndpointId),
    authorize({ ...writes, endpoint: 'webhook_endpoints_rotate' }),
    async (ctx) => {
      const secret = mintSecret();
      const at = now();
      const rotated = await rotateSecret(partnerOf(ctx.state.principal).id, ctx.state.input.params.id, secret, secretHint(secret), at, new Date(at + PREVIOUS_SECRET_VALID_MS));
      if (!rotated) throw notFound('webhook_endpoint_not_found');
      ctx.body = endpointObject(rotated, secret);
    },
  );

  router.post<{ input: Input<typeof RecoverEndpoint> }>(
    `${BASE}/endpoints/:id/recover`,
    validate(RecoverEndpoint),
    authorize({ ...writes, endpoint: 'webhook_endpoints_recover' }),
    async (ctx) => {
      const endpoint = await endpointOf(ctx);
      requireActive(endpoint);
      const { since, until } = ctx.state.input.body;
      const id = mintId('recovery');
      await startRecovery(await temporal(), { recoveryId: id, endpointId: endpoint.publicId, since: since.toISOString(), until: until.toISOString() });
      ctx.status = 202;
      ctx.body = recoveryObject({ id, endpoint: endpoint.publicId, since, until });
    },
  );

  router.get<{ input: Input<typeof ListDeliveries> }>(`${BASE}/deliveries`, validate(ListDeliveries), authorize({ ...reads, endpoint: 'webhook_deliveries_list' }), async (ctx) => {
    const { limit, after, filters } = ctx.state.input.query;
    const rows = await deliveryPage(partnerOf(ctx.state.principal).id, after, limit + 1, { status: filters.status, eventType: filters.event_type, tenantRef: filters.tenant_ref, endpoint: filters.endpoint });
    ctx.body = listPage(rows, limit, deliveryObject);
  });

  router.get<{ input: Input<typeof DeliveryId> }>(`${BASE}/deliveries/:id`, validate(DeliveryId), authorize({ ...reads, endpoint: 'webhook_deliveries_read' }), async (ctx) => {
    const delivery = await findDelivery(partnerOf(ctx.state.principal).id, ctx.state.input.params.id);
    if (!delivery) throw notFound('webhook_delivery_not_found');
    ctx.body = deliveryObject(delivery);
  });

  router.post<{ input: Input<typeof DeliveryId> }>(
    `${BASE}/deliveries/:id/resend`,
    validate(DeliveryId),
    authorize({ ...writes, endpoint: 'webhook_deliveries_resend' }),
    async (ctx) => {
      const partnerId = partnerOf(ctx.state.principal).id;
      const delivery = await findDelivery(partnerId, ctx.state.input.params.id);
      if (!delivery) throw notFound('webhook_delivery_not_found');
      if (delivery.endpoint_status === 'deleted') throw new ServiceError('webhook_endpoint_disabled', 'The endpoint this delivery went to has been deleted.');
      if (delivery.endpoint_status !== 'active') throw new ServiceError('webhook_endpoint_disabled', 'The endpoint is disabled; re-enable it with PATCH {"status":"active"} first.');
      // Reopened as a new generation, not started: the dispatcher, the one starter of delivery workflows,
      // starts it on its next pass. A pending one is in progress, unless its workflow is gone (terminated).
      const reopened = (await reopenDeliveries([delivery.public_id])).length === 1;
      if (!reopened && ((await deliveryRunning(await temporal(), delivery.public_id, delivery.generation)) || !(await reopenStranded(delivery.public_id, delivery.generation)))) {
        throw new ServiceError('webhook_delivery_in_progress', 'This delivery is still being attempted; resend it once it has finished.');
      }
      ctx.status = 202;
      ctx.body = deliveryObject((await findDelivery(partnerId, delivery.public_id))!);
    },
  );
}
