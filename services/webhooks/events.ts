import type { EntityManager } from '@mikro-orm/postgresql';
import { WEBHOOK_HISTORY_RETENTION_DAYS } from '../../config/plans';
import { WEBHOOK_TEST_EVENT, type WebhookEventType } from '../../config/webhooks';
import { newId } from '../ids';

/** What a webhook receives: the documented payload (README, OpenAPI component WebhookEvent). */
export interface WebhookPayload<D = Record<string, unknown>> {
  id: string;
  type: WebhookEventType | typeof WEBHOOK_TEST_EVENT;
  created_at: string;
  workspace_id: string;
  data: D;
}

export interface NewEvent {
  workspaceId: string;
  type: WebhookEventType | typeof WEBHOOK_TEST_EVENT;
  data: Record<string, unknown>;
  /**
   * Names the change that causes the event (e.g. `model.version:<ver>`): a second record of the same
   * change is a no-op, so a retried activity or a concurrent sweep never makes the event twice.
   * Null for events that are their own cause (test events).
   */
  dedupeKey: string | null;
  /** Deliver to this endpoint only, whatever its `events` (test events). */
  endpointId?: string;
}

export interface RecordedEvent {
  eventId: string;
  deliveryIds: string[];
}

/** Runs one statement inside the caller's transaction. */
export async function execIn<T>(em: EntityManager, text: string, params: unknown[]): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, 'all', em.getTransactionContext());
}

/**
 * The outbox write: stores the event and one pending delivery per active endpoint of the workspace
 * that subscribes to its type, in the caller's transaction (the one that makes the change), so the
 * event exists if and only if the change committed. The relay starts the deliveries' workflows after
 * the commit. Null when the change was already recorded.
 */
export async function recordEvent(em: EntityManager, event: NewEvent, now: Date = new Date()): Promise<RecordedEvent | null> {
  const eventId = newId('event');
  const payload: WebhookPayload = { id: eventId, type: event.type, created_at: now.toISOString(), workspace_id: event.workspaceId, data: event.data };
  const inserted = await execIn<{ id: string }>(
    em,
    `insert into webhook_events (id, workspace_id, type, payload, dedupe_key, created_at) values (?, ?, ?, ?, ?, ?)
     on conflict (dedupe_key) do nothing returning id`,
    [eventId, event.workspaceId, event.type, JSON.stringify(payload), event.dedupeKey, now],
  );
  if (inserted.length === 0) return null;
  const endpoints = event.endpointId
    ? await execIn<{ id: string }>(em, `select id from webhook_endpoints where id = ? and workspace_id = ?`, [event.endpointId, event.workspaceId])
    : await execIn<{ id: string }>(
        em,
        `select id from webhook_endpoints where workspace_id = ? and active and (events is null or events @> jsonb_build_array(?::text)) order by created_at`,
        [event.workspaceId, event.type],
      );
  const deliveryIds = endpoints.map(() => newId('delivery'));
  if (deliveryIds.length > 0) {
    await execIn(
      em,
      `insert into webhook_deliveries (id, event_id, endpoint_id, workspace_id, created_at)
       select x.d, ?, x.e, ?, ? from json_to_recordset(?::json) as x(d text, e text)`,
      [eventId, event.workspaceId, now, JSON.stringify(deliveryIds.map((d, i) => ({ d, e: endpoints[i]!.id })))],
    );
  }
  return { eventId, deliveryIds };
}

/** Rows of each table one sweep removes at most, so a long backlog is worked off over several runs. */
const PRUNE_BATCH = 10_000;

/**
 * Drops the delivery history past its retention (WEBHOOK_HISTORY_RETENTION_DAYS), run by the sweep
 * Schedule: finished deliveries created before the cutoff with their attempts (a foreign key
 * cascade), then events before the cutoff that no delivery refers to any more. A delivery still
 * pending keeps its row and its event whatever its age. Without this, every event, delivery and
 * attempt (with its payload and the receiver's answer) stayed for good, and `POST
 * /v1/webhooks/{id}/test` or `…/redeliver`, called as fast as a rate budget allows, grew them
 * without bound (an eighth probe).
 */
export async function pruneWebhookHistory(em: EntityManager, now: Date): Promise<{ deliveries: number; events: number }> {
  const cutoff = new Date(now.getTime() - WEBHOOK_HISTORY_RETENTION_DAYS * 86_400_000);
  const connection = em.getConnection();
  const deliveries = await connection.execute<Array<{ id: string }>>(
    `delete from webhook_deliveries where id in (
       select id from webhook_deliveries where created_at < ? and state <> 'pending' limit ${PRUNE_BATCH}
     ) returning id`,
    [cutoff],
  );
  const events = await connection.execute<Array<{ id: string }>>(
    `delete from webhook_events where id in (
       select e.id from webhook_events e
        where e.created_at < ? and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)
        limit ${PRUNE_BATCH}
     ) returning id`,
    [cutoff],
  );
  return { deliveries: deliveries.length, events: events.length };
}
