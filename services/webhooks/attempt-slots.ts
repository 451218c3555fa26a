import type { EntityManager } from '@mikro-orm/postgresql';
import { execIn } from './events';

/**
 * Webhook attempts in flight, bounded across every worker process, per account and per endpoint. A
 * worker runs at most WEBHOOK_ATTEMPTS_PER_WORKER attempts at once, and an attempt may wait its whole
 * timeout on a receiver that never answers: without a bound, one account's hanging receivers held all
 * of them, and another account's delivery waited up to that timeout (a twenty-third probe: 0.6 s
 * became 4.2 s). Bounded per workspace, one account's twelve workspaces still held them all, and one
 * hanging endpoint of a workspace held up its healthy ones for a minute (a twenty-sixth probe): so an
 * account holds at most WEBHOOK_ATTEMPTS_PER_ACCOUNT, and an endpoint WEBHOOK_ATTEMPTS_PER_ENDPOINT of
 * those, leaving the rest to the account's other endpoints. Fairness keys order the attempts waiting
 * for a worker's slot but free none running; these bounds keep slots for the others.
 */
export interface AttemptSlot {
  scope: string;
  slot: number;
  deliveryId: string;
}

export interface AttemptScopes {
  accountId: string;
  endpointId: string;
}

export interface AttemptBounds {
  perAccount: number;
  perEndpoint: number;
}

/** Tries this many times when another attempt took the free slot this one chose in the same instant. */
const CLAIM_TRIES = 3;

/**
 * Leases one of the scope's `bound` slots to the delivery's attempt until `leaseMs` from now (the
 * database's clock, shared by every worker), or null when all are leased. An attempt retried by
 * Temporal after its worker was lost takes back the slot its delivery still holds.
 */
export async function claimSlot(em: EntityManager, scope: string, accountId: string, deliveryId: string, bound: number, leaseMs: number): Promise<AttemptSlot | null> {
  const [held] = await execIn<{ slot: number }>(
    em,
    `update webhook_attempt_slots set expires_at = now() + make_interval(secs => ?) where scope = ? and delivery_id = ? returning slot`,
    [leaseMs / 1000, scope, deliveryId],
  );
  if (held) return { scope, slot: held.slot, deliveryId };
  for (let i = 0; i < CLAIM_TRIES; i += 1) {
    // A free slot is one never used or whose lease ran out; chosen at random among them, so that two
    // attempts claiming at once rarely choose the same one. The loser of such a race updates nothing
    // (its conflict's row is live) and chooses again.
    const [claimed] = await execIn<{ slot: number }>(
      em,
      `insert into webhook_attempt_slots (scope, slot, account_id, delivery_id, expires_at)
       select ?, s, ?, ?, now() + make_interval(secs => ?)
         from generate_series(0, ? - 1) as s
        where not exists (select 1 from webhook_attempt_slots t where t.scope = ? and t.slot = s and t.expires_at > now())
        order by random() limit 1
       on conflict (scope, slot) do update set account_id = excluded.account_id, delivery_id = excluded.delivery_id, expires_at = excluded.expires_at
        where webhook_attempt_slots.expires_at <= now()
       returning slot`,
      [scope, accountId, deliveryId, leaseMs / 1000, bound, scope],
    );
    if (claimed) return { scope, slot: claimed.slot, deliveryId };
    const [free] = await execIn<{ free: boolean }>(em, `select count(*) < ? as free from webhook_attempt_slots where scope = ? and expires_at > now()`, [bound, scope]);
    if (!free?.free) return null;
  }
  return null;
}

/** Frees the slot at the attempt's end; a lease already taken over by another attempt is left alone. */
export async function releaseSlot(em: EntityManager, held: AttemptSlot): Promise<void> {
  await execIn(em, `delete from webhook_attempt_slots where scope = ? and slot = ? and delivery_id = ?`, [held.scope, held.slot, held.deliveryId]);
}

/**
 * The endpoint's slot, then the account's: both held, or neither (null: the attempt waits). The
 * endpoint's first, so that one endpoint's waiting deliveries contend among themselves before they
 * reach the account's slots its other endpoints need.
 */
export async function claimAttemptSlots(em: EntityManager, scopes: AttemptScopes, deliveryId: string, bounds: AttemptBounds, leaseMs: number): Promise<AttemptSlot[] | null> {
  const endpoint = await claimSlot(em, `endpoint:${scopes.endpointId}`, scopes.accountId, deliveryId, bounds.perEndpoint, leaseMs);
  if (!endpoint) return null;
  const account = await claimSlot(em, `account:${scopes.accountId}`, scopes.accountId, deliveryId, bounds.perAccount, leaseMs);
  if (!account) {
    await releaseSlot(em, endpoint);
    return null;
  }
  return [endpoint, account];
}

export async function releaseAttemptSlots(em: EntityManager, held: AttemptSlot[]): Promise<void> {
  for (const slot of held) await releaseSlot(em, slot);
}
