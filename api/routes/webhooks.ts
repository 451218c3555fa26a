import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../../config/env';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  redeliver,
  rotateEndpointSecret,
  sendTestEvent,
  updateEndpoint,
} from '../../services/webhooks/endpoints';
import { loadSecretBox } from '../../services/webhooks/secrets';
import { presentDelivery, presentWebhook } from '../presenters';
import { route, type AnyRoute } from '../route';
import { pageQuerySchema, paginated } from '../schemas/common';
import {
  createWebhookBodySchema,
  deliveryParamsSchema,
  patchWebhookBodySchema,
  redeliveryResultSchema,
  rotateWebhookSecretBodySchema,
  webhookDeliveryListSchema,
  webhookIdParamsSchema,
  webhookListSchema,
  webhookSchema,
  webhookTestResultSchema,
  webhookWithSecretSchema,
} from '../schemas/webhooks';
import { requireAuth } from './helpers';

const TAG = 'Webhooks';
const URL_REFUSED: [number, string] = [400, 'WEBHOOK_URL_NOT_ALLOWED'];
const NOT_FOUND: [number, string] = [404, 'NOT_FOUND'];
const INACTIVE: [number, string] = [409, 'WEBHOOK_INACTIVE'];
const BACKLOGGED: [number, string] = [409, 'TOO_MANY_PENDING_DELIVERIES'];

export function webhookRoutes(deps: { orm: MikroORM; config: AppConfig }): AnyRoute[] {
  const endpointDeps = { box: loadSecretBox(deps.config), policy: { allowLoopbackHttp: deps.config.WEBHOOKS_ALLOW_LOOPBACK_HTTP } };
  return [
    route({
      method: 'get',
      path: '/v1/webhooks',
      summary: 'List the webhooks of the workspace (secrets are never shown)',
      tag: TAG,
      auth: 'admin',
      query: pageQuerySchema(),
      responses: { 200: { description: 'The webhooks, newest first.', schema: webhookListSchema } },
      errors: [],
      async handler(ctx, { query, auth }) {
        const { items, total } = await listEndpoints(deps.orm.em.fork(), requireAuth(auth).workspaceId, query);
        ctx.body = paginated(items.map(presentWebhook), total, query);
      },
    }),
    route({
      method: 'post',
      path: '/v1/webhooks',
      summary: 'Register a webhook (the signing secret is returned once)',
      tag: TAG,
      auth: 'admin',
      idempotent: true,
      secretAnswer: true,
      body: createWebhookBodySchema,
      responses: { 201: { description: 'The webhook with its secret.', schema: webhookWithSecretSchema } },
      errors: [URL_REFUSED, [409, 'TOO_MANY_WEBHOOKS'], [409, 'WEBHOOK_URL_EXISTS']],
      async handler(ctx, { body, auth }) {
        const created = await createEndpoint(deps.orm.em.fork(), endpointDeps, requireAuth(auth).workspaceId, body);
        ctx.status = 201;
        ctx.body = { ...presentWebhook(created.endpoint), secret: created.secret };
      },
    }),
    route({
      method: 'get',
      path: '/v1/webhooks/:id',
      summary: 'One webhook, with why it is disabled when it is',
      tag: TAG,
      auth: 'admin',
      params: webhookIdParamsSchema,
      responses: { 200: { description: 'The webhook.', schema: webhookSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, auth }) {
        ctx.body = presentWebhook(await getEndpoint(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.id));
      },
    }),
    route({
      method: 'patch',
      path: '/v1/webhooks/:id',
      summary: 'Change the URL, the events or turn a webhook on or off',
      tag: TAG,
      auth: 'admin',
      params: webhookIdParamsSchema,
      body: patchWebhookBodySchema,
      responses: { 200: { description: 'The webhook as changed.', schema: webhookSchema } },
      errors: [URL_REFUSED, NOT_FOUND, [409, 'WEBHOOK_URL_EXISTS']],
      async handler(ctx, { params, body, auth }) {
        ctx.body = presentWebhook(await updateEndpoint(deps.orm.em.fork(), endpointDeps, requireAuth(auth).workspaceId, params.id, body));
      },
    }),
    route({
      method: 'delete',
      path: '/v1/webhooks/:id',
      summary: 'Delete a webhook (deliveries still retrying stop)',
      tag: TAG,
      auth: 'admin',
      params: webhookIdParamsSchema,
      responses: { 204: { description: 'Deleted.' } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, auth }) {
        await deleteEndpoint(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.id);
        ctx.status = 204;
      },
    }),
    route({
      method: 'post',
      path: '/v1/webhooks/:id/rotate-secret',
      summary: 'New signing secret; the previous one keeps signing during the overlap (both signatures are sent)',
      tag: TAG,
      auth: 'admin',
      idempotent: true,
      secretAnswer: true,
      params: webhookIdParamsSchema,
      body: rotateWebhookSecretBodySchema,
      responses: { 200: { description: 'The webhook with its new secret (shown once).', schema: webhookWithSecretSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, body, auth }) {
        const rotated = await rotateEndpointSecret(deps.orm.em.fork(), endpointDeps.box, requireAuth(auth).workspaceId, params.id, body.overlap_hours, new Date());
        ctx.body = { ...presentWebhook(rotated.endpoint), secret: rotated.secret };
      },
    }),
    route({
      method: 'post',
      path: '/v1/webhooks/:id/test',
      summary: 'Send a `webhook.test` event to this webhook alone',
      tag: TAG,
      auth: 'admin',
      idempotent: true,
      params: webhookIdParamsSchema,
      responses: { 202: { description: 'The event is stored and its delivery started; follow it in the deliveries.', schema: webhookTestResultSchema } },
      errors: [NOT_FOUND, INACTIVE, BACKLOGGED],
      async handler(ctx, { params, auth }) {
        const sent = await sendTestEvent(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.id);
        ctx.status = 202;
        ctx.body = { event_id: sent.eventId, delivery_id: sent.deliveryId };
      },
    }),
    route({
      method: 'get',
      path: '/v1/webhooks/:id/deliveries',
      summary: 'Deliveries of a webhook, newest first, each with every attempt',
      tag: TAG,
      auth: 'admin',
      params: webhookIdParamsSchema,
      query: pageQuerySchema(),
      responses: { 200: { description: 'A page of deliveries.', schema: webhookDeliveryListSchema } },
      errors: [NOT_FOUND],
      async handler(ctx, { params, query, auth }) {
        const { items, total } = await listDeliveries(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.id, query);
        ctx.body = paginated(items.map(presentDelivery), total, query);
      },
    }),
    route({
      method: 'post',
      path: '/v1/webhooks/:id/deliveries/:deliveryId/redeliver',
      summary: 'Send a delivery’s event again (a new delivery, same webhook-id)',
      tag: TAG,
      auth: 'admin',
      idempotent: true,
      params: deliveryParamsSchema,
      responses: { 202: { description: 'The new delivery is started.', schema: redeliveryResultSchema } },
      errors: [NOT_FOUND, INACTIVE, BACKLOGGED],
      async handler(ctx, { params, auth }) {
        const sent = await redeliver(deps.orm.em.fork(), requireAuth(auth).workspaceId, params.id, params.deliveryId);
        ctx.status = 202;
        ctx.body = { delivery_id: sent.deliveryId, redelivery_of: sent.redeliveryOf };
      },
    }),
  ];
}
