import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema } from '../db/entities';
import { recordClosedAllowance } from './closed-allowances';
import { AppError, notFound } from './errors';
import { revokeAllSessions } from './auth/sessions';
import { hasLiveSubscription, isLiveStatus, releaseSchedule, retrieveSubscription } from './billing';
import { oneBillingChangeAtATime } from './billing-change-leases';
import Stripe from 'stripe';
import { callStripe } from './stripe';
import type { TemporalGateway } from './temporal/gateway';
import { workflowIds } from './temporal/ids';

/** Rows one erase step removes from one table: short transactions, however large the account. */
const ERASE_BATCH_ROWS = 5_000;

/**
 * Asks for the account's erasure. In one transaction the account stops authenticating (sessions and
 * keys revoked, webhooks disabled, marked deleted) and its address is freed; the `delete-account/<acc>` workflow
 * erases the rest, and the sweep restarts it if this process dies before starting it.
 */
export async function requestAccountDeletion(em: EntityManager, accountId: string, confirmation: string, now: Date): Promise<void> {
  await em.transactional(async (tx) => {
    const account = await tx.findOne(AccountSchema, { id: accountId, deletedAt: null });
    if (!account) throw notFound('The account');
    if (confirmation.trim().toLowerCase() !== account.email) {
      throw new AppError('CONFIRMATION_MISMATCH', 400, 'The confirmation must be the address of this account.');
    }
    await recordClosedAllowance(tx, account, now);
    await tx.execute(`delete from sign_in_challenges where email = ?`, [account.email]);
    await tx.execute(`update accounts set deleted_at = ?, email = ?, full_name = null, password_hash = null where id = ?`, [
      now,
      // The address is free at once for a new account; the row keeps a unique, undeliverable one until erased.
      `${account.id}@deleted.invalid`,
      account.id,
    ]);
    await tx.execute(`update api_keys set revoked_at = ? where revoked_at is null and workspace_id in (select id from workspaces where account_id = ?)`, [now, accountId]);
    // Its webhooks stop with it: until the erasure reaches them (a Stripe outage holds it up for as
    // long as it lasts), a delivery still pending, or an event of its models (the daily model.stale
    // check), kept sending the deleted account's data to its receivers.
    await tx.execute(
      `update webhook_endpoints set active = false, disabled_reason = 'The account was deleted.', disabled_at = ?, updated_at = ?
        where active and workspace_id in (select id from workspaces where account_id = ?)`,
      [now, now, accountId],
    );
    await revokeAllSessions(tx, accountId, now);
  });
}

/**
 * Deletion as the account route asks it: marked and locked out at once, then the erasure workflow.
 * A process that dies between the two leaves a marked account, which the sweep hands to the workflow.
 */
export async function deleteAccountAndErase(em: EntityManager, temporal: TemporalGateway, accountId: string, confirmation: string, now: Date): Promise<void> {
  await requestAccountDeletion(em, accountId, confirmation, now);
  await temporal.startAccountDeletion(accountId);
}

/**
 * The workflows that may still run for an account: training, refresh and integration of each of its
 * models (deleted ones too) and the purchases still waiting for their payment.
 */
export async function accountWorkflowIds(em: EntityManager, accountId: string): Promise<string[]> {
  const models = await em.execute<Array<{ id: string }>>(`select id from models where account_id = ?`, [accountId]);
  const purchases = await em.execute<Array<{ id: string }>>(`select id from credit_purchases where account_id = ? and state = 'pending'`, [accountId]);
  return [
    ...models.flatMap((m) => [workflowIds.train(m.id), workflowIds.refresh(m.id), workflowIds.integrate(m.id)]),
    ...purchases.map((p) => workflowIds.purchase(p.id)),
  ];
}

/**
 * A deleted account must not be charged again: the Checkout Sessions of its Stripe customer still
 * open are expired, so that none can be paid any more (a payment page left open in another tab made a
 * live subscription, or took a credit purchase's money, for an account that no longer existed), and its
 * live Stripe subscription is set to end with the period already paid. Idempotent; nothing to do
 * without a customer, or without Stripe configured. Answers whether a subscription was ended.
 */
export async function endSubscriptionOf(em: EntityManager, stripe: Stripe | null, accountId: string): Promise<boolean> {
  // After any plan change or cancellation still in progress (a PATCH admitted before the deletion
  // undoes a cancellation at Stripe first): while one holds the account, this step fails with 409
  // BILLING_CHANGE_IN_PROGRESS and its workflow retries it.
  return oneBillingChangeAtATime(em, accountId, () => endSubscriptionAlone(em, stripe, accountId));
}

async function endSubscriptionAlone(em: EntityManager, stripe: Stripe | null, accountId: string): Promise<boolean> {
  const rows = await em.execute<Array<{ stripe_customer_id: string | null; subscription_id: string | null; subscription_status: string | null }>>(
    `select stripe_customer_id, subscription_id, subscription_status from accounts where id = ? and deleted_at is not null`,
    [accountId],
  );
  const account = rows[0];
  // Without Stripe configured no page can be closed (they expire by themselves within a day); the
  // erasure is not held up for it, unlike a live subscription, which would bill on.
  if (account?.stripe_customer_id && stripe) await expireOpenCheckouts(stripe, account.stripe_customer_id);
  // The stored cancellation is not trusted: a change that ran just before may have undone it at Stripe
  // with its event still on the way. Stripe's own state is read below.
  if (!account?.subscription_id) return false;
  if (!hasLiveSubscription({ subscriptionId: account.subscription_id, subscriptionStatus: account.subscription_status })) return false;
  if (!stripe) throw new AppError('BILLING_UNAVAILABLE', 503, 'Stripe is not configured: the subscription of a deleted account cannot be ended.');
  const subscriptionId = account.subscription_id;
  // Stripe's state first, as the account's may be stale: a subscription Stripe no longer knows (while
  // it knows the customer) or that ended with its event lost bills no one, and Stripe refuses to update
  // either (404, 400), so this step failed and was retried for ever and the account was never erased
  // (an eighteenth probe). Both customer and subscription unknown is a wrong key: thrown, retried.
  const latest = await retrieveSubscription(em, stripe, accountId, subscriptionId);
  if (latest === 'unknown' || !isLiveStatus(latest.status) || latest.cancel_at_period_end) {
    await em.execute(`update accounts set subscription_status = ?, subscription_cancel_at_period_end = ? where id = ?`, [
      latest === 'unknown' ? 'canceled' : latest.status,
      latest !== 'unknown' && latest.cancel_at_period_end,
      accountId,
    ]);
    return false;
  }
  // Stripe refuses to change a scheduled subscription's cancellation: its schedule (a downgrade waiting) is released first.
  await releaseSchedule(stripe, latest);
  await callStripe(() => stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: true }));
  await em.execute(`update accounts set subscription_cancel_at_period_end = true where id = ?`, [accountId]);
  return true;
}

/** Expires every open Checkout Session of the customer (subscriptions and credit purchases alike). */
async function expireOpenCheckouts(stripe: Stripe, customer: string): Promise<void> {
  await callStripe(async () => {
    for await (const session of stripe.checkout.sessions.list({ customer, status: 'open', limit: 100 })) {
      if (session.status !== 'open') continue;
      // One completed or expired since the list answers 400: nothing is left to close.
      await stripe.checkout.sessions.expire(session.id).catch((err: unknown) => {
        if (!(err instanceof Stripe.errors.StripeInvalidRequestError)) throw err;
      });
    }
  });
}

// Children before parents, so that every batch is a plain indexed delete. `?` is the account id.
const ERASE_STEPS: Array<[table: string, where: string]> = [
  ['webhook_attempts', `delivery_id in (select id from webhook_deliveries where workspace_id in (select id from workspaces where account_id = ?))`],
  ['webhook_deliveries', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['webhook_events', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['webhook_endpoints', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['credit_alerts', `account_id = ?`],
  ['model_stale_episodes', `model_id in (select id from models where account_id = ?)`],
  ['prediction_calls', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['outcomes', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['model_context_chunks', `model_id in (select id from models where account_id = ?)`],
  ['model_versions', `model_id in (select id from models where account_id = ?)`],
  ['models', `account_id = ?`],
  ['idempotency_records', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['request_log', `account_id = ?`],
  ['credit_reservations', `account_id = ?`],
  ['credit_purchases', `account_id = ?`],
  ['subscription_checkouts', `account_id = ?`],
  ['credit_ledger', `account_id = ?`],
  ['api_keys', `workspace_id in (select id from workspaces where account_id = ?)`],
  ['oauth_identities', `account_id = ?`],
  ['refresh_tokens', `account_id = ?`],
  ['sessions', `account_id = ?`],
  ['workspaces', `account_id = ?`],
];

/**
 * One erase step of a deleted account: up to ERASE_BATCH_ROWS rows of the first table that still
 * holds some, or the account row itself at the end. Idempotent; `done` once nothing is left.
 */
export async function eraseAccountStep(em: EntityManager, accountId: string): Promise<{ table: string; erased: number; done: boolean }> {
  const marked = await em.execute<Array<{ id: string }>>(`select id from accounts where id = ? and deleted_at is not null`, [accountId]);
  if (marked.length === 0) return { table: 'accounts', erased: 0, done: true };
  for (const [table, where] of ERASE_STEPS) {
    const rows = await em.execute<Array<{ n: string }>>(
      `with gone as (delete from ${table} where ctid in (select ctid from ${table} where ${where} limit ${ERASE_BATCH_ROWS}) returning 1) select count(*) as n from gone`,
      [accountId],
    );
    const erased = Number(rows[0]?.n ?? 0);
    if (erased > 0) return { table, erased, done: false };
  }
  // Its id alone stays, so that a Stripe subscription event naming it is known as one of ours (billing.ts).
  await em.execute(
    `with gone as (delete from accounts where id = ? and deleted_at is not null returning id) insert into erased_accounts (id) select id from gone on conflict do nothing`,
    [accountId],
  );
  return { table: 'accounts', erased: 1, done: true };
}

/** Accounts marked deleted a while ago and still present: their erasure workflow may never have started. */
export async function strandedDeletions(em: EntityManager, markedBefore: Date): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(`select id from accounts where deleted_at is not null and deleted_at < ? order by deleted_at limit 100`, [markedBefore]);
  return rows.map((r) => r.id);
}
