import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from './errors';

/**
 * Longest a plan change or cancellation may hold its account: its few Stripe calls, each bounded by
 * the SDK's timeout and retries. A process lost mid-change frees the account after this long.
 */
export const BILLING_CHANGE_LEASE_MS = 5 * 60_000;

/**
 * Runs one change of the account's subscription (PATCH or DELETE) while no other runs, in any API
 * process: a second one answers 409 BILLING_CHANGE_IN_PROGRESS at once. Two changes at once each read
 * the subscription, then wrote what they had read: a downgrade that read it before an upgrade landed
 * wrote the old price back into its schedule, so Stripe invoiced the upgrade and moved the customer
 * back down at once, unprorated; a cancellation made meanwhile was undone by the downgrade's schedule
 * (a twenty-fifth probe). The lease is a row with its end, not a lock held on a connection: a change
 * waits on Stripe for seconds, and waiting changes held the pool's connections.
 */
export async function oneBillingChangeAtATime<T>(em: EntityManager, accountId: string, change: () => Promise<T>): Promise<T> {
  const token = randomUUID();
  const [claimed] = await em.getConnection().execute<Array<{ token: string }>>(
    `insert into billing_change_leases (account_id, token, lease_until) values (?, ?, now() + make_interval(secs => ?))
     on conflict (account_id) do update set token = excluded.token, lease_until = excluded.lease_until
      where billing_change_leases.lease_until <= now()
     returning token`,
    [accountId, token, BILLING_CHANGE_LEASE_MS / 1000],
  );
  if (!claimed) {
    throw new AppError('BILLING_CHANGE_IN_PROGRESS', 409, 'Another change of this subscription is in progress; retry when it has finished.');
  }
  try {
    return await change();
  } finally {
    await em.getConnection().execute(`delete from billing_change_leases where account_id = ? and token = ?`, [accountId, token]);
  }
}
