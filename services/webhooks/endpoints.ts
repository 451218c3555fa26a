import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { MAX_WEBHOOKS_PER_WORKSPACE } from '../../config/plans';
import { WEBHOOK_TEST_EVENT, WEBHOOKS, type WebhookEventType } from '../../config/webhooks';
import { WebhookEndpointSchema, WorkspaceSchema, type WebhookEndpoint } from '../../db/entities';
import { AppError, mapDatabaseError, notFound } from '../errors';
import { newId } from '../ids';
import { execIn, recordEvent } from './events';
import { generateWebhookSecret, type SecretBox } from './secrets';
import { checkWebhookUrl, type TargetPolicy } from './targets';

export interface EndpointDeps {
  box: SecretBox;
  policy: TargetPolicy;
}

const urlExists = (): AppError => new AppError('WEBHOOK_URL_EXISTS', 409, 'This URL is already registered as a webhook of the workspace.');
const DB_CONFLICTS = { webhook_endpoints_workspace_url_unique: urlExists() };

export async function getEndpoint(em: EntityManager, workspaceId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = await em.findOne(WebhookEndpointSchema, { id, workspace: workspaceId });
  if (!endpoint) throw notFound('The webhook');
  return endpoint;
}

export async function listEndpoints(em: EntityManager, workspaceId: string, page: { limit: number; offset: number }) {
  const [items, total] = await em.findAndCount(
    WebhookEndpointSchema,
    { workspace: workspaceId },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

/**
 * Registers an endpoint; the secret is returned once and stored encrypted. The workspace row lock
 * serialises concurrent creations so the limit holds; the unique index catches a duplicate URL.
 */
export async function createEndpoint(
  em: EntityManager,
  deps: EndpointDeps,
  workspaceId: string,
  input: { url: string; events?: WebhookEventType[] | null },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const url = await checkWebhookUrl(input.url, deps.policy);
  const secret = generateWebhookSecret();
  try {
    return await em.transactional(async (tx) => {
      await tx.findOneOrFail(WorkspaceSchema, { id: workspaceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      const count = await tx.count(WebhookEndpointSchema, { workspace: workspaceId });
      if (count >= MAX_WEBHOOKS_PER_WORKSPACE) {
        throw new AppError('TOO_MANY_WEBHOOKS', 409, `A workspace has at most ${MAX_WEBHOOKS_PER_WORKSPACE} webhooks; delete one first.`, { limit: MAX_WEBHOOKS_PER_WORKSPACE });
      }
      if (await tx.count(WebhookEndpointSchema, { workspace: workspaceId, url })) throw urlExists();
      const now = new Date();
      const endpoint = tx.create(WebhookEndpointSchema, {
        id: newId('webhook'),
        workspace: tx.getReference(WorkspaceSchema, workspaceId),
        url,
        events: input.events ? [...new Set(input.events)] : null,
        active: true,
        secretCiphertext: deps.box.seal(secret),
        previousSecretCiphertext: null,
        previousSecretExpiresAt: null,
        lastSuccessAt: null,
        failingSince: null,
        disabledReason: null,
        disabledAt: null,
        createdAt: now,
        updatedAt: now,
      });
      await tx.flush();
      return { endpoint, secret };
    });
  } catch (err) {
    throw mapDatabaseError(err, DB_CONFLICTS);
  }
}

/**
 * Changes url, events or active. Turning an endpoint back on clears why it was disabled and restarts
 * its failure clock; so does a new URL.
 */
export async function updateEndpoint(
  em: EntityManager,
  deps: EndpointDeps,
  workspaceId: string,
  id: string,
  changes: { url?: string; events?: WebhookEventType[] | null; active?: boolean },
): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(em, workspaceId, id);
  const url = changes.url === undefined ? undefined : await checkWebhookUrl(changes.url, deps.policy);
  if (url !== undefined && url !== endpoint.url) {
    if (await em.count(WebhookEndpointSchema, { workspace: workspaceId, url })) throw urlExists();
    endpoint.url = url;
    // Another receiver: the old one's failures say nothing about it (a fourteenth probe's endpoint
    // moved after its old URL had failed for 5 days was disabled at the new URL's first failure,
    // without a single retry).
    endpoint.failingSince = null;
  }
  if (changes.events !== undefined) endpoint.events = changes.events === null ? null : [...new Set(changes.events)];
  if (changes.active !== undefined && changes.active !== endpoint.active) {
    endpoint.active = changes.active;
    endpoint.failingSince = null;
    endpoint.disabledReason = changes.active ? null : 'Turned off by PATCH /v1/webhooks/{id}.';
    endpoint.disabledAt = changes.active ? null : new Date();
  }
  try {
    await em.flush();
  } catch (err) {
    throw mapDatabaseError(err, DB_CONFLICTS);
  }
  return endpoint;
}

/** Deletes the endpoint with its deliveries; deliveries still retrying stop at their next attempt. */
export async function deleteEndpoint(em: EntityManager, workspaceId: string, id: string): Promise<void> {
  const endpoint = await getEndpoint(em, workspaceId, id);
  await em.removeAndFlush(endpoint);
}

/**
 * A new secret; the previous one keeps signing (both signatures are sent) for `overlapHours`, so the
 * receiver can switch without losing a delivery. 0 ends the previous secret at once.
 */
export async function rotateEndpointSecret(
  em: EntityManager,
  box: SecretBox,
  workspaceId: string,
  id: string,
  overlapHours: number,
  now: Date,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  // The endpoint's row is locked first: two rotations at once each read the same secret, and the later
  // write kept the old one as `previous` while the earlier rotation's secret, already answered, never
  // signed anything. Serialised, the earlier one's secret is the later one's `previous`.
  return em.transactional(async (tx) => {
    const endpoint = await tx.findOne(WebhookEndpointSchema, { id, workspace: workspaceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!endpoint) throw notFound('The webhook');
    const secret = generateWebhookSecret();
    endpoint.previousSecretCiphertext = overlapHours > 0 ? endpoint.secretCiphertext : null;
    endpoint.previousSecretExpiresAt = overlapHours > 0 ? new Date(now.getTime() + overlapHours * 3_600_000) : null;
    endpoint.secretCiphertext = box.seal(secret);
    return { endpoint, secret };
  });
}

/** Sends a `webhook.test` event to this endpoint alone (active or not is its own business: inactive ones are skipped). */
export async function sendTestEvent(em: EntityManager, workspaceId: string, id: string): Promise<{ eventId: string; deliveryId: string }> {
  const endpoint = await getEndpoint(em, workspaceId, id);
  if (!endpoint.active) throw new AppError('WEBHOOK_INACTIVE', 409, 'The webhook is not active; turn it on with PATCH first.');
  return em.transactional(async (tx) => {
    await refuseBeyondPendingDeliveries(tx, endpoint.id);
    const recorded = await recordEvent(tx, {
      workspaceId,
      type: WEBHOOK_TEST_EVENT,
      data: { webhook_id: endpoint.id, message: 'A test event sent on request.' },
      dedupeKey: null,
      endpointId: endpoint.id,
    });
    return { eventId: recorded!.eventId, deliveryId: recorded!.deliveryIds[0]! };
  });
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  redelivery_of: string | null;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  completed_at: Date | null;
  event_type: string;
  payload: Record<string, unknown>;
}

export interface AttemptRow {
  delivery_id: string;
  number: number;
  scheduled_at: Date;
  started_at: Date;
  duration_ms: number;
  status: number | null;
  response_excerpt: string | null;
  error: string | null;
  outcome: string;
}

/** The deliveries of an endpoint, newest first, each with its attempts in order. */
export async function listDeliveries(em: EntityManager, workspaceId: string, endpointId: string, page: { limit: number; offset: number }) {
  await getEndpoint(em, workspaceId, endpointId);
  const [counted] = await execIn<{ n: number }>(em, `select count(*)::int as n from webhook_deliveries where endpoint_id = ?`, [endpointId]);
  const deliveries = await execIn<DeliveryRow>(
    em,
    `select d.id, d.event_id, d.endpoint_id, d.redelivery_of, d.state, d.attempts, d.last_status, d.last_error, d.created_at, d.completed_at,
            e.type as event_type, e.payload
       from webhook_deliveries d join webhook_events e on e.id = d.event_id
      where d.endpoint_id = ? order by d.created_at desc, d.id desc limit ? offset ?`,
    [endpointId, page.limit, page.offset],
  );
  const attempts = deliveries.length
    ? await execIn<AttemptRow>(em, `select * from webhook_attempts where delivery_id in (${deliveries.map(() => '?').join(',')}) order by number`, deliveries.map((d) => d.id))
    : [];
  return { items: deliveries.map((d) => ({ delivery: d, attempts: attempts.filter((a) => a.delivery_id === d.id) })), total: counted?.n ?? 0 };
}

/**
 * Sends a delivery's event again to its endpoint, as a new delivery (`redelivery_of` names the first)
 * with the same `webhook-id`, so a receiver that already processed it can recognise it.
 */
export async function redeliver(em: EntityManager, workspaceId: string, endpointId: string, deliveryId: string): Promise<{ deliveryId: string; redeliveryOf: string }> {
  const endpoint = await getEndpoint(em, workspaceId, endpointId);
  const [original] = await execIn<{ id: string; event_id: string; redelivery_of: string | null }>(
    em,
    `select id, event_id, redelivery_of from webhook_deliveries where id = ? and endpoint_id = ?`,
    [deliveryId, endpointId],
  );
  if (!original) throw notFound('The delivery');
  if (!endpoint.active) throw new AppError('WEBHOOK_INACTIVE', 409, 'The webhook is not active; turn it on with PATCH first.');
  const id = newId('delivery');
  const first = original.redelivery_of ?? original.id;
  await em.transactional(async (tx) => {
    await refuseBeyondPendingDeliveries(tx, endpointId);
    await execIn(tx, `insert into webhook_deliveries (id, event_id, endpoint_id, workspace_id, redelivery_of, created_at) values (?, ?, ?, ?, ?, now())`, [
      id,
      original.event_id,
      endpointId,
      workspaceId,
      first,
    ]);
  });
  return { deliveryId: id, redeliveryOf: first };
}

/**
 * 409 TOO_MANY_PENDING_DELIVERIES when the endpoint already has WEBHOOKS.maxPendingForRequestedDeliveries
 * deliveries waiting, or the account's workspaces WEBHOOKS.maxPendingForRequestedDeliveriesPerAccount:
 * a test event or a redelivery asked for then would only wait behind them. Counted under a
 * transaction-scoped lock of the account's requested deliveries, so requests made at once cannot pass
 * it together. The account's bound: one admin key queued 500 test events over its 10 endpoints at
 * receivers that never answer, 100 each allowed (a twenty-seventh probe).
 */
async function refuseBeyondPendingDeliveries(tx: EntityManager, endpointId: string): Promise<void> {
  const [owner] = await execIn<{ account_id: string }>(
    tx,
    `select w.account_id, pg_advisory_xact_lock(hashtextextended('webhook-requested-deliveries:' || w.account_id, 0))
       from webhook_endpoints e join workspaces w on w.id = e.workspace_id where e.id = ?`,
    [endpointId],
  );
  if (!owner) throw notFound('The webhook');
  const [row] = await execIn<{ endpoint: number; account: number }>(
    tx,
    `select count(*) filter (where endpoint_id = ?)::int as endpoint, count(*)::int as account
       from webhook_deliveries where state = 'pending' and workspace_id in (select id from workspaces where account_id = ?)`,
    [endpointId, owner.account_id],
  );
  const bounds = [
    { whose: 'This webhook has', pending: row?.endpoint ?? 0, limit: WEBHOOKS.maxPendingForRequestedDeliveries, remedy: 'turn the webhook off and on' },
    { whose: "This account's webhooks have", pending: row?.account ?? 0, limit: WEBHOOKS.maxPendingForRequestedDeliveriesPerAccount, remedy: 'turn webhooks that do not answer off and on' },
  ];
  const reached = bounds.find((b) => b.pending >= b.limit);
  if (reached) {
    throw new AppError(
      'TOO_MANY_PENDING_DELIVERIES',
      409,
      `${reached.whose} ${reached.pending} deliveries waiting (at most ${reached.limit} before a test event or a redelivery is taken); wait for them, or ${reached.remedy}.`,
      { limit: reached.limit, pending: reached.pending },
    );
  }
}
