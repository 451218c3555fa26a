import type { EntityManager } from '@mikro-orm/postgresql';
import { execIn } from './events';

/**
 * A workspace's delivery attempts in flight, bounded across every worker process. A worker runs at
 * most WEBHOOK_ATTEMPTS_PER_WORKER attempts at once, and an attempt may wait its whole timeout on a
 * receiver that never answers: without a bound per workspace, one workspace's hanging receivers held
 * all of them, and another account's delivery waited up to that timeout (a twenty-third probe: 0.6 s
 * became 4.2 s with 120 hanging attempts). Fairness keys order the attempts waiting for a slot but
 * free none running; this bound keeps the rest of the slots for the other workspaces.
 */
export interface AttemptSlot {
  workspaceId: string;
  slot: number;
  deliveryId: string;
}

/** Tries this many times when another attempt took the free slot this one chose in the same instant. */
const CLAIM_TRIES = 3;

/**
 * Leases one of the workspace's `perWorkspace` slots to the delivery's attempt until `leaseMs` from
 * now (the database's clock, shared by every worker), or null when all are leased. An attempt retried
 * by Temporal after its worker was lost takes back the slot its delivery still holds.
 */
export async function claimAttemptSlot(
  em: EntityManager,
  workspaceId: string,
  deliveryId: string,
  perWorkspace: number,
  leaseMs: number,
): Promise<AttemptSlot | null> {
  const [held] = await execIn<{ slot: number }>(
    em,
    `update webhook_attempt_slots set expires_at = now() + make_interval(secs => ?) where workspace_id = ? and delivery_id = ? returning slot`,
    [leaseMs / 1000, workspaceId, deliveryId],
  );
  if (held) return { workspaceId, slot: held.slot, deliveryId };
  for (let i = 0; i < CLAIM_TRIES; i += 1) {
    // A free slot is one never used or whose lease ran out; chosen at random among them, so that two
    // attempts claiming at once rarely choose the same one. The loser of such a race updates nothing
    // (its conflict's row is live) and chooses again.
    const [claimed] = await execIn<{ slot: number }>(
      em,
      `insert into webhook_attempt_slots (workspace_id, slot, delivery_id, expires_at)
       select ?, s, ?, now() + make_interval(secs => ?)
         from generate_series(0, ? - 1) as s
        where not exists (select 1 from webhook_attempt_slots t where t.workspace_id = ? and t.slot = s and t.expires_at > now())
        order by random() limit 1
       on conflict (workspace_id, slot) do update set delivery_id = excluded.delivery_id, expires_at = excluded.expires_at
        where webhook_attempt_slots.expires_at <= now()
       returning slot`,
      [workspaceId, deliveryId, leaseMs / 1000, perWorkspace, workspaceId],
    );
    if (claimed) return { workspaceId, slot: claimed.slot, deliveryId };
    const [free] = await execIn<{ free: boolean }>(
      em,
      `select count(*) < ? as free from webhook_attempt_slots where workspace_id = ? and expires_at > now()`,
      [perWorkspace, workspaceId],
    );
    if (!free?.free) return null;
  }
  return null;
}

/** Frees the slot at the attempt's end; a lease already taken over by another attempt is left alone. */
export async function releaseAttemptSlot(em: EntityManager, held: AttemptSlot): Promise<void> {
  await execIn(em, `delete from webhook_attempt_slots where workspace_id = ? and slot = ? and delivery_id = ?`, [held.workspaceId, held.slot, held.deliveryId]);
}
