import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import pLimit from 'p-limit';
import type { AppConfig } from '../config/env';
import {
  CREDIT_BLOCK,
  MAX_PENDING_PURCHASES,
  MAX_PURCHASED_BALANCE,
  PAID_PLANS,
  PLAN_PRICES,
  PLANS,
  STRIPE_CALLS_PER_ACCOUNT,
  creditPriceLookupKey,
  minimumCreditUnits,
  planPriceLookupKey,
  type PaidPlan,
  type PlanName,
} from '../config/plans';
import { AccountSchema, CreditLedgerSchema, CreditPurchaseSchema, StripeEventSchema, type Account, type CreditPurchase, type PurchaseState } from '../db/entities';
import { lockAccount } from './credits';
import { oneBillingChangeAtATime } from './billing-change-leases';
import { execIn } from './webhooks/events';
import { AppError, notFound } from './errors';
import { newId } from './ids';
import { billingUnavailable, callStripe, fromStripe, isAlreadyRefunded, isInvalidRequest, isResourceMissing, type Stripe } from './stripe';
import { postgresLimiter, RateLimited } from './rate-limits';
import { RateLimiterRes, type RateLimiterPostgres } from 'rate-limiter-flexible';
import type { TemporalGateway } from './temporal/gateway';

/**
 * How long a purchase without a stored Checkout Session counts among those waiting for payment: its
 * call may still be creating the session until then (a fourteenth probe: ten purchases refused by
 * Stripe, answered 502, held the account's purchases back for a day as "waiting").
 */
const SESSIONLESS_PURCHASE_GRACE_MINUTES = 10;

/** Stripe subscription statuses under which the plan is the subscription's. */
const LIVE_STATUSES = new Set(['active', 'trialing', 'past_due']);
/** Statuses of a subscription that no longer pays: the account falls back to free. */
const ENDED_STATUSES = new Set(['canceled', 'unpaid', 'incomplete_expired', 'paused']);

export type PurchaseOutcome = 'settled' | 'failed' | 'expired';

export interface PurchaseSignal {
  outcome: PurchaseOutcome;
  /** The Stripe event that decided it. */
  eventId: string;
}

/** The account's plan, subscription and credits, as Stripe last reported them and the ledger holds them. */
export interface SubscriptionState {
  account: Account;
  hasBillingAccount: boolean;
}

/** Whether a Stripe subscription status still bills (the statuses the account keeps its plan in). */
export const isLiveStatus = (status: string): boolean => LIVE_STATUSES.has(status);
export const hasLiveSubscription = (account: Pick<Account, 'subscriptionId' | 'subscriptionStatus'>): boolean => account.subscriptionId !== null && LIVE_STATUSES.has(account.subscriptionStatus ?? '');

const noActiveSubscription = (): AppError =>
  new AppError('NO_ACTIVE_SUBSCRIPTION', 409, 'The account has no active subscription; subscribe through POST /v1/billing/checkout first.');

/**
 * A contract's plan, allowance and quotas are the operator's: a subscription through Checkout would
 * move the account to the subscribed plan (a fourteenth probe's contract of 5,000,000 credits a month
 * became build, 20,000 a month, and nothing but the database could give it back).
 */
const planByContract = (): AppError =>
  new AppError('PLAN_BY_CONTRACT', 409, 'The account is on a contract plan: its plan is changed by contract, not through Checkout.');

const planOfLookupKey = (key: string | null | undefined): PaidPlan | null => {
  const match = /^plan_(.+)$/.exec(key ?? '');
  return match && (PAID_PLANS as readonly string[]).includes(match[1]!) ? (match[1] as PaidPlan) : null;
};

/**
 * The plan a subscription pays for: its price's lookup_key (`plan_<plan>`), or null (the plan then
 * stays as it is). Not the subscription's `metadata.plan`: that names the plan of its checkout, which
 * no later change of price updates, so a price that lost its lookup key (an operator's new price takes
 * it over) moved a growth customer to the build plan it had checked out with (a twenty-fifth probe).
 */
function planOfSubscription(sub: Stripe.Subscription): PaidPlan | null {
  return planOfLookupKey(sub.items.data[0]?.price.lookup_key);
}

const idOf = (ref: string | { id: string } | null | undefined): string | null => (ref === null || ref === undefined ? null : typeof ref === 'string' ? ref : ref.id);

/**
 * Moves the account to `plan` inside the caller's transaction (the account row locked, this month
 * opened by lockAccount), with its ledger row: an upgrade raises what is left of this month's allowance
 * by what the new allowance brings above the largest one granted this month (allowanceCeiling); a
 * downgrade keeps this month's and applies from the next period. So moving down and up again within a
 * month grants the higher allowance once, never once per move.
 */
function movePlan(tx: EntityManager, account: Account, plan: PlanName, reference: string, now: Date): void {
  if (account.plan === plan) return;
  const previous = account.monthlyAllowance;
  const next = PLANS[plan].monthlyAllowance ?? previous;
  const ceiling = Math.max(account.allowanceCeiling, previous);
  const raise = Math.max(0, next - ceiling);
  account.allowanceRemaining += raise;
  account.allowanceCeiling = Math.max(ceiling, next);
  account.plan = plan;
  account.monthlyAllowance = next;
  tx.create(CreditLedgerSchema, {
    id: newId('event'),
    accountId: account.id,
    workspaceId: null,
    kind: 'adjustment',
    operation: next > previous ? 'plan_upgrade' : 'plan_downgrade',
    allowanceDelta: raise,
    balanceDelta: 0,
    allowanceAfter: account.allowanceRemaining,
    balanceAfter: account.purchasedBalance,
    reference: `${reference}:${plan}`.slice(0, 80),
    createdAt: now,
  });
}

/**
 * Records a Stripe event as handled, in the caller's transaction; false when it was handled before
 * (a concurrent delivery of the same event waits on the primary key, then finds it).
 */
async function recordEvent(tx: EntityManager, event: Stripe.Event): Promise<boolean> {
  const rows = await tx
    .getConnection()
    .execute<Array<{ id: string }>>(
      `insert into stripe_events (id, type, created_at) values (?, ?, ?) on conflict (id) do nothing returning id`,
      [event.id, event.type, new Date(event.created * 1000)],
      'all',
      tx.getTransactionContext(),
    );
  return rows.length === 1;
}

/**
 * Credits a purchase's units to the purchased balance, once: the purchase row is locked and checked,
 * and the ledger accepts one `purchase` row per purchase. A verified payment always credits, also for
 * a purchase already given up as expired or failed (the money came in).
 */
export async function settlePurchase(em: EntityManager, purchaseId: string, by: string): Promise<PurchaseState | 'missing'> {
  return em.transactional(async (tx) => {
    const purchase = await tx.findOne(CreditPurchaseSchema, { id: purchaseId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!purchase) return 'missing';
    if (purchase.state === 'settled') return 'settled';
    const now = new Date();
    const account = await lockAccount(tx, purchase.accountId, now);
    account.purchasedBalance += purchase.units;
    purchase.state = 'settled';
    purchase.closedAt = now;
    purchase.closedBy = by;
    tx.create(CreditLedgerSchema, {
      id: newId('event'),
      accountId: account.id,
      workspaceId: purchase.workspaceId,
      kind: 'purchase',
      operation: 'credit_purchase',
      allowanceDelta: 0,
      balanceDelta: purchase.units,
      allowanceAfter: account.allowanceRemaining,
      balanceAfter: account.purchasedBalance,
      reference: purchase.id,
      createdAt: now,
    });
    // A refund or dispute that Stripe reported before the settlement (events come in any order).
    reverseLostPayment(tx, purchase, account, now);
    await tx.flush();
    return 'settled';
  });
}

/**
 * Dispute statuses under which the disputed amount is not withheld from the merchant: inquiries
 * (`warning_*`), disputes prevented, and disputes won. Every other status (open, under review, lost,
 * appealed, and any status Stripe adds later) counts as withheld, so an unknown one never leaves
 * credits for money the service does not have.
 */
const DISPUTE_STATUSES_NOT_WITHHELD = new Set(['won', 'prevented', 'warning_needs_response', 'warning_under_review', 'warning_closed']);

/** Of a purchase paid `amount`, the credits `units` that `amountLost` of the money (refunded or withheld) bought: rounded up. */
function unitsLost(units: number, amount: number, amountLost: number): number {
  if (amountLost <= 0) return 0;
  if (amountLost >= amount) return units;
  return Math.min(units, Math.ceil((units * amountLost) / amount));
}

/**
 * Brings the credits taken back for a settled purchase to what its lost money bought, in the caller's
 * transaction (purchase and account rows locked): one `reversal` ledger row per change, negative when
 * credits are taken back, positive when a dispute was won and they are given back. Spent credits
 * leave the purchased balance below zero: a debt that holds back as much of the allowance and that the
 * next purchase covers.
 */
function reverseLostPayment(tx: EntityManager, purchase: CreditPurchase, account: Account, now: Date): void {
  if (purchase.state !== 'settled') return;
  const target = unitsLost(purchase.units, purchase.amount, purchase.amountLost);
  const change = target - purchase.unitsReversed;
  if (change === 0) return;
  account.purchasedBalance -= change;
  purchase.unitsReversed = target;
  tx.create(CreditLedgerSchema, {
    id: newId('event'),
    accountId: account.id,
    workspaceId: purchase.workspaceId,
    kind: 'reversal',
    operation: change > 0 ? 'payment_reversed' : 'payment_reinstated',
    allowanceDelta: 0,
    balanceDelta: -change,
    allowanceAfter: account.allowanceRemaining,
    balanceAfter: account.purchasedBalance,
    reference: purchase.id,
    createdAt: now,
  });
}

/** Ends a pending purchase as failed or expired (nothing credited); answers the state it ends in. */
export async function closePurchase(em: EntityManager, purchaseId: string, state: 'failed' | 'expired', by: string): Promise<PurchaseState | 'missing'> {
  await em
    .getConnection()
    .execute(`update credit_purchases set state = ?, closed_at = now(), closed_by = ? where id = ? and state = 'pending'`, [state, by, purchaseId]);
  const purchase = await em.fork().findOne(CreditPurchaseSchema, { id: purchaseId });
  return purchase ? purchase.state : 'missing';
}

/**
 * The session of a purchase whose call died before storing it: Stripe may have made it all the same
 * (the call's idempotency key was sent), so it is looked up among the customer's sessions.
 */
async function findPurchaseSession(em: EntityManager, stripe: Stripe, purchase: CreditPurchase): Promise<string | null> {
  const account = await em.fork().findOneOrFail(AccountSchema, { id: purchase.accountId });
  if (!account.stripeCustomerId) return null;
  const customer = account.stripeCustomerId;
  for await (const session of stripe.checkout.sessions.list({ customer, created: { gte: Math.floor(purchase.createdAt.getTime() / 1000) - 60 }, limit: 100 })) {
    if (session.metadata?.purchase_id === purchase.id) return session.id;
  }
  return null;
}

/**
 * No settlement event came before the session's deadline (a lost delivery, or a session never
 * created because its call died): asks Stripe. Paid → settled; completed but paid by a method that
 * settles later → still pending; open → expired at Stripe first, so that it can no longer be paid.
 */
export async function reconcilePurchase(em: EntityManager, stripe: Stripe | null, purchaseId: string): Promise<PurchaseState | 'missing'> {
  const purchase = await em.fork().findOne(CreditPurchaseSchema, { id: purchaseId });
  if (!purchase) return 'missing';
  if (purchase.state !== 'pending') return purchase.state;
  const sessionId = purchase.checkoutSessionId ?? (stripe ? await findPurchaseSession(em, stripe, purchase) : null);
  if (stripe && sessionId) {
    let session = await stripe.checkout.sessions.retrieve(sessionId);
    if (session.status === 'open') {
      // Expiring fails when the customer is paying right now: look again then.
      session = await stripe.checkout.sessions.expire(session.id).catch(() => stripe.checkout.sessions.retrieve(session.id));
    }
    if (session.payment_status === 'paid' || session.payment_status === 'no_payment_required') return settlePurchase(em.fork(), purchaseId, 'reconcile');
    if (session.status === 'complete' || session.status === 'open') return 'pending';
  }
  return closePurchase(em.fork(), purchaseId, 'expired', 'reconcile');
}

/**
 * A change admitted just before its account's deletion that got the account's billing lease after it:
 * the deletion ends the subscription with its period, and a change now would undo that (a plan change
 * first undoes a cancellation at Stripe).
 */
const accountDeleted = (): AppError => new AppError('ACCOUNT_DELETED', 409, 'This account was deleted while the call was made; its subscription ends with the period paid and nothing was changed.');

/** Whether moving from `from` to `to` is an upgrade (a larger monthly allowance). */
const isUpgrade = (from: PlanName, to: PlanName): boolean => (PLANS[to].monthlyAllowance ?? Infinity) > (PLANS[from].monthlyAllowance ?? Infinity);

/**
 * How Stripe bills an upgrade, so that it pays for what the allowance rules grant (DESIGN.md: an
 * upgrade raises this month's allowance left by the difference at once). Stripe's prorations bill an
 * upgrade by what is left of the subscription's period, so an upgrade on a period's last day paid
 * about 1/30 of the price difference for the whole difference of allowance (build to growth: about
 * 32 USD for 980,000 credits; a fourteenth probe). An upgrade starts a new period at once and is
 * invoiced the new price less the unused part of the old (`billing_cycle_anchor[type]: now`); until
 * that invoice is paid Stripe keeps the old price (pending update). A downgrade is not a price change
 * now: it waits for the period's end in a subscription schedule (scheduleDowngrade), nothing credited.
 */
function upgradeTerms(): Pick<Stripe.SubscriptionUpdateParams, 'proration_behavior' | 'billing_cycle_anchor' | 'payment_behavior'> {
  return { proration_behavior: 'always_invoice', billing_cycle_anchor: { type: 'now' }, payment_behavior: 'pending_if_incomplete' };
}

/** A plan change Stripe holds for later: the plan the subscription's schedule moves it to, and when. */
export interface PendingChange {
  plan: PaidPlan;
  at: Date;
}

/**
 * The plan change the subscription's schedule holds (the phase after the current one, when its price
 * is another plan's), or null: no schedule, one no longer active, or a next phase on the same plan.
 * One read of the schedule, its phases' prices expanded; a schedule made in the dashboard or the
 * portal counts as one made here.
 */
async function pendingChangeOf(stripe: Stripe, logger: Logger, sub: Stripe.Subscription): Promise<PendingChange | null> {
  const scheduleId = idOf(sub.schedule);
  if (!scheduleId) return null;
  const schedule = await callStripe(() => stripe.subscriptionSchedules.retrieve(scheduleId, { expand: ['phases.items.price'] }));
  const current = schedule.current_phase;
  if (schedule.status !== 'active' || !current) return null;
  const next = schedule.phases.find((phase) => phase.start_date === current.end_date);
  const price = next?.items[0]?.price;
  if (!next || !price) return null;
  const plan = typeof price === 'string' || price.deleted ? null : planOfLookupKey(price.lookup_key);
  if (!plan) {
    logger.warn({ subscriptionId: sub.id, scheduleId }, "the subscription schedule's next phase has no plan_<plan> price: no plan change shown");
    return null;
  }
  return plan === planOfSubscription(sub) ? null : { plan, at: new Date(next.start_date * 1000) };
}

/**
 * Releases the subscription's schedule, if it has one still managing it: the subscription goes on as
 * it is, and the change the schedule held (a downgrade at the period's end) is dropped. Stripe refuses
 * to change a scheduled subscription's cancellation, so a cancellation releases it first. A schedule
 * released meanwhile (another call, its last phase ended) is fine.
 */
export async function releaseSchedule(stripe: Stripe, sub: Pick<Stripe.Subscription, 'schedule'>): Promise<boolean> {
  const scheduleId = idOf(sub.schedule);
  if (!scheduleId) return false;
  return callStripe(async () => {
    try {
      await stripe.subscriptionSchedules.release(scheduleId);
      return true;
    } catch (err) {
      if (!isInvalidRequest(err)) throw err;
      const schedule = await stripe.subscriptionSchedules.retrieve(scheduleId);
      if (schedule.status === 'active' || schedule.status === 'not_started') throw err;
      return false;
    }
  });
}

/**
 * Whose a Checkout purchase is, in one read: an account that is `live`; one `deleted` since (still
 * stored, or erased, by the account its session named); or `unknown` (another deployment or product
 * on the same Stripe account).
 */
async function purchaseAccount(em: EntityManager, purchaseId: string, sessionAccountId: string | null): Promise<'live' | 'deleted' | 'unknown'> {
  const [row] = await em.execute<Array<{ live: boolean }>>(
    `select a.deleted_at is null as live from credit_purchases p join accounts a on a.id = p.account_id where p.id = ?
     union all select false from erased_accounts where id = ?
     limit 1`,
    [purchaseId, sessionAccountId ?? ''],
  );
  return row === undefined ? 'unknown' : row.live ? 'live' : 'deleted';
}

/** A quarter of the database pool (at least one) for Stripe's events: the rest stays for the routes. */
export const stripeEventsAtOnce = (poolMax: number): number => Math.max(1, Math.floor(poolMax / 4));

/**
 * Billing through Stripe (DESIGN.md, "Billing"): one customer per account, Checkout for subscriptions
 * and credit purchases, the portal, and the webhook whose events are the only source of plan changes
 * and settlements.
 */
export class Billing {
  private readonly stripeCalls: RateLimiterPostgres;
  /**
   * Stripe events handled at once by this process. Handling a subscription event asks Stripe for the
   * subscription's latest state inside a transaction (serialised per account by an advisory lock), so
   * each event in progress holds a database connection for as long as Stripe takes to answer (up to
   * its timeout, retried). A burst of events, or a slow Stripe, took every connection of the pool, and
   * every route of every account waited for one (a twenty-fourth probe's reading; billing.test.ts). The others wait here, holding none; Stripe retries any it gave up on.
   */
  private readonly eventsAtOnce: pLimit.Limit;

  constructor(
    private readonly deps: { orm: MikroORM; stripe: Stripe | null; temporal: TemporalGateway; config: AppConfig; logger: Logger },
  ) {
    this.stripeCalls = postgresLimiter({ knex: deps.orm.em.getKnex() }, 'stripe-calls', STRIPE_CALLS_PER_ACCOUNT.points, STRIPE_CALLS_PER_ACCOUNT.windowSeconds);
    this.eventsAtOnce = pLimit(stripeEventsAtOnce(deps.config.DATABASE_POOL_MAX));
  }

  private stripe(): Stripe {
    if (!this.deps.stripe) throw billingUnavailable();
    return this.deps.stripe;
  }

  /**
   * Stripe for a call an account asks for (checkout, purchase, portal, plan change, cancellation),
   * counted on the account's budget of such calls (STRIPE_CALLS_PER_ACCOUNT; 429 RATE_LIMITED when
   * spent). Every customer's payments share one Stripe API rate limit, which one account's calls at
   * its workspace's request rate (100 a second on build) could otherwise spend (an eighth probe).
   */
  private async stripeFor(accountId: string): Promise<Stripe> {
    const stripe = this.stripe();
    try {
      await this.stripeCalls.consume(accountId);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      throw new RateLimited({ limit: STRIPE_CALLS_PER_ACCOUNT.points, remaining: 0, resetSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) }, 'billing');
    }
    return stripe;
  }

  private returnUrl(outcome: 'success' | 'cancelled', withSession: boolean): string {
    const url = new URL(this.deps.config.BILLING_RETURN_URL);
    url.searchParams.set('checkout', outcome);
    // Stripe fills {CHECKOUT_SESSION_ID} in; URL encoding would hide the braces from it.
    return withSession ? `${url.toString()}&session_id={CHECKOUT_SESSION_ID}` : url.toString();
  }

  /** How long a purchase's workflow waits for its settlement before asking Stripe. */
  private purchaseWaitMs(): number {
    return (this.deps.config.PURCHASE_SESSION_TTL_SECONDS + this.deps.config.PURCHASE_RECONCILE_GRACE_SECONDS) * 1000;
  }

  private async account(accountId: string): Promise<Account> {
    return this.deps.orm.em.fork().findOneOrFail(AccountSchema, { id: accountId }, { refresh: true });
  }

  /**
   * The account's Stripe customer, created on first use, and created again when the one stored was
   * deleted at Stripe (from its dashboard): every checkout, purchase and portal call would otherwise
   * fail for good. The creation carries an idempotency key of the account (and of the customer it
   * replaces), so two such calls at once get the same customer from Stripe, and only the row still
   * holding what it read takes one.
   */
  async ensureCustomer(accountId: string): Promise<string> {
    const account = await this.account(accountId);
    const stripe = this.stripe();
    const stored = account.stripeCustomerId;
    if (stored) {
      const current = await callStripe(() => stripe.customers.retrieve(stored));
      if (!current.deleted) return stored;
      this.deps.logger.warn({ accountId, customerId: stored }, 'the Stripe customer was deleted at Stripe: a new one replaces it');
    }
    const customer = await callStripe(() =>
      stripe.customers.create(
        { email: account.email, metadata: { account_id: account.id } },
        { idempotencyKey: stored ? `customer-${account.id}-after-${stored}` : `customer-${account.id}` },
      ),
    );
    await this.deps.orm.em
      .fork()
      .getConnection()
      .execute(`update accounts set stripe_customer_id = ? where id = ? and stripe_customer_id is not distinct from ?`, [customer.id, account.id, stored]);
    const kept = (await this.account(accountId)).stripeCustomerId;
    if (!kept) throw new Error(`account ${accountId} has no Stripe customer after creating one`);
    return kept;
  }

  private async price(lookupKey: string): Promise<Stripe.Price> {
    const stripe = this.stripe();
    const found = await callStripe(() => stripe.prices.list({ lookup_keys: [lookupKey], active: true, limit: 1 }));
    const price = found.data[0];
    if (!price) throw new AppError('PRICE_NOT_CONFIGURED', 503, `The Stripe account has no active price with lookup_key ${lookupKey}.`);
    return price;
  }

  /**
   * A Checkout Session in subscription mode (the plan changes only when Stripe reports the subscription
   * active), the only one of the account's still payable. Made under the
   * account's billing lease, as plan changes are: two checkouts at once each found no open session to
   * expire and each made one, so both pages could be paid (a twenty-seventh probe paid pro and growth,
   * and the second subscription to arrive was cancelled with a proration credit, not a refund).
   */
  async checkout(accountId: string, plan: PaidPlan): Promise<{ id: string; url: string; expiresAt: Date }> {
    return this.alone(accountId, (account) => this.checkoutAlone(account, plan));
  }

  /**
   * Runs one change of the account's subscription (checkout, plan change, cancellation) while no other
   * runs, under its billing lease, on the account as it stands then: one deleted meanwhile (the call was
   * admitted just before the deletion) is 409 ACCOUNT_DELETED.
   */
  private alone<T>(accountId: string, change: (account: Account) => Promise<T>): Promise<T> {
    return oneBillingChangeAtATime(this.deps.orm.em.fork(), accountId, async () => {
      const account = await this.account(accountId);
      if (account.deletedAt !== null) throw accountDeleted();
      return change(account);
    });
  }

  /** checkout, the account's only change of its subscription in progress. */
  private async checkoutAlone(account: Account, plan: PaidPlan): Promise<{ id: string; url: string; expiresAt: Date }> {
    const accountId = account.id;
    if (account.plan === 'contract') throw planByContract();
    if (hasLiveSubscription(account)) {
      throw new AppError('SUBSCRIPTION_EXISTS', 409, 'The account already has an active subscription: change its plan with PATCH /v1/billing/subscription.');
    }
    const stripe = await this.stripeFor(accountId);
    const customer = await this.ensureCustomer(accountId);
    const price = await this.price(planPriceLookupKey(plan));
    await this.expireOpenSubscriptionCheckouts(customer);
    const session = await callStripe(() =>
      stripe.checkout.sessions.create({
        mode: 'subscription',
        customer,
        client_reference_id: accountId,
        line_items: [{ price: price.id, quantity: 1 }],
        metadata: { account_id: accountId, plan },
        subscription_data: { metadata: { account_id: accountId, plan } },
        success_url: this.returnUrl('success', true),
        cancel_url: this.returnUrl('cancelled', false),
      }),
    );
    if (!session.url) throw new AppError('PAYMENT_PROVIDER_ERROR', 502, 'Stripe answered a Checkout Session without a URL.');
    // Recorded before its URL is given out: if Stripe's events about it never arrive, the sweep asks
    // Stripe whether it was paid (reconcileSubscriptionCheckouts).
    await this.deps.orm.em
      .fork()
      .getConnection()
      .execute(`insert into subscription_checkouts (session_id, account_id, expires_at) values (?, ?, ?) on conflict (session_id) do nothing`, [
        session.id,
        accountId,
        new Date(session.expires_at * 1000),
      ]);
    return { id: session.id, url: session.url, expiresAt: new Date(session.expires_at * 1000) };
  }

  /**
   * Expires the customer's subscription Checkout Sessions still open, so that at most one can be paid:
   * two sessions opened before either was paid would otherwise make two subscriptions. One paid in the
   * meantime cannot be expired any more; the webhook cancels the subscription it makes if another is
   * already live (applySubscription).
   */
  private async expireOpenSubscriptionCheckouts(customer: string): Promise<void> {
    const stripe = this.stripe();
    const open = await callStripe(() => stripe.checkout.sessions.list({ customer, status: 'open', limit: 100 }));
    for (const session of open.data) {
      if (session.mode !== 'subscription' || session.status !== 'open') continue;
      try {
        await stripe.checkout.sessions.expire(session.id);
      } catch (err) {
        // completed between the list and the expiry: the webhook's guard covers it
        this.deps.logger.warn({ err, sessionId: session.id }, 'could not expire an open subscription Checkout Session');
      }
    }
  }

  /**
   * 409 TOO_MANY_PENDING_PURCHASES when MAX_PENDING_PURCHASES already wait for payment; 409
   * PURCHASED_BALANCE_LIMIT when the purchased balance, with the purchases still pending and this
   * one, would pass MAX_PURCHASED_BALANCE: the balance is a 32-bit integer, and a settlement beyond it
   * would fail for ever after the customer paid.
   * A purchase whose Checkout Session was never stored (Stripe refused it, or its call died) has no
   * payment page anyone saw: after SESSIONLESS_PURCHASE_GRACE_MINUTES it is no longer one waiting for
   * payment, though its units still count toward the balance limit until its workflow closes it.
   */
  private async refuseBeyondBalanceLimit(em: EntityManager, accountId: string, units: number): Promise<void> {
    const [row] = await em.execute<Array<{ balance: number; pending: string; open: number }>>(
      `select a.purchased_balance as balance, p.pending, p.open
         from accounts a,
              lateral (select coalesce(sum(units), 0) as pending,
                              count(*) filter (where checkout_session_id is not null or created_at > now() - interval '${SESSIONLESS_PURCHASE_GRACE_MINUTES} minutes')::int as open
                         from credit_purchases where account_id = a.id and state = 'pending' and expires_at > now()) p
        where a.id = ?`,
      [accountId],
    );
    if (!row) throw notFound('The account');
    // Each pending purchase holds a Checkout Session at Stripe and a workflow for a day: without a
    // bound, one admin key opened them as fast as its rate budget allowed (an eighth probe opened 20
    // at once, each 200), spending the Stripe account's API rate limit that every customer shares.
    if (row.open >= MAX_PENDING_PURCHASES) {
      throw new AppError(
        'TOO_MANY_PENDING_PURCHASES',
        409,
        `An account has at most ${MAX_PENDING_PURCHASES} credit purchases waiting for payment; pay one or let it expire first.`,
        { limit: MAX_PENDING_PURCHASES },
      );
    }
    const room = Math.max(0, MAX_PURCHASED_BALANCE - row.balance - Number(row.pending));
    if (units > room) {
      const most = Math.floor(room / CREDIT_BLOCK) * CREDIT_BLOCK;
      throw new AppError(
        'PURCHASED_BALANCE_LIMIT',
        409,
        `An account holds at most ${MAX_PURCHASED_BALANCE.toLocaleString('en-US')} purchased credits, pending purchases included; this one can buy at most ${most.toLocaleString('en-US')} more.`,
        { limit: MAX_PURCHASED_BALANCE, available: most },
      );
    }
  }

  /**
   * Records a purchase of `units` credits and opens its Checkout Session; nothing is credited here.
   * The `purchase/<pur>` workflow is started before the purchase row is committed: a row that exists
   * always has its workflow, whatever point the call dies at (a workflow whose row never came, or whose
   * session was never created, ends as expired at its deadline, having credited nothing).
   */
  async buyCredits(caller: { accountId: string; workspaceId: string; plan: PlanName }, units: number): Promise<CreditPurchase> {
    if (PLAN_PRICES[caller.plan].perCreditBlock === null || !PLANS[caller.plan].canBuyCredits) {
      throw new AppError('PLAN_HAS_NO_UNIT_PRICE', 409, `The ${caller.plan} plan has no unit price: credits cannot be bought on it (subscribe to build, pro or growth).`);
    }
    // A first check refuses before anything is asked of Stripe; the one that counts is repeated below.
    await this.refuseBeyondBalanceLimit(this.deps.orm.em.fork(), caller.accountId, units);
    const stripe = await this.stripeFor(caller.accountId);
    const customer = await this.ensureCustomer(caller.accountId);
    const price = await this.price(creditPriceLookupKey(caller.plan));
    // Stripe refuses a payment below its minimum charge (a block costs 0.40 USD on pro and 0.30 on
    // growth): such a purchase is a clear 400 here instead of a 502 from Stripe.
    const minimum = minimumCreditUnits(price.unit_amount ?? 0);
    if (units < minimum) {
      throw new AppError('VALIDATION_ERROR', 400, `Invalid body.units: a purchase on the ${caller.plan} plan is at least ${minimum} credits (Stripe's minimum charge).`, { minimum_units: minimum });
    }
    const blocks = units / CREDIT_BLOCK;
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.deps.config.PURCHASE_SESSION_TTL_SECONDS * 1000);
    const purchaseId = newId('purchase');
    const em = this.deps.orm.em.fork();
    // The limit is checked again, and the row written, under a transaction-scoped advisory lock of the
    // account's purchases: concurrent purchases each passed the first check on the same pending sum
    // (a probe opened five 10,000,000-credit purchases with room for one). Not the account's row lock,
    // which every paid call of the account takes.
    const purchase = await em.transactional(async (tx) => {
      await execIn(tx, `select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`credit-purchase:${caller.accountId}`]);
      await this.refuseBeyondBalanceLimit(tx, caller.accountId, units);
      await this.deps.temporal.startPurchase(purchaseId, this.purchaseWaitMs());
      return tx.create(CreditPurchaseSchema, {
        id: purchaseId,
        accountId: caller.accountId,
        workspaceId: caller.workspaceId,
        plan: caller.plan,
        units,
        amount: (price.unit_amount ?? 0) * blocks,
        currency: price.currency,
        state: 'pending',
        paymentIntentId: null,
        amountLost: 0,
        unitsReversed: 0,
        checkoutSessionId: null,
        paymentUrl: null,
        expiresAt,
        createdAt: now,
        closedAt: null,
        closedBy: null,
      });
    });
    const session = await callStripe(() =>
      stripe.checkout.sessions.create(
        {
          mode: 'payment',
          customer,
          client_reference_id: purchaseId,
          line_items: [{ price: price.id, quantity: blocks }],
          metadata: { purchase_id: purchaseId, account_id: caller.accountId, units: String(units) },
          payment_intent_data: { metadata: { purchase_id: purchaseId } },
          expires_at: Math.floor(expiresAt.getTime() / 1000),
          success_url: this.returnUrl('success', true),
          cancel_url: this.returnUrl('cancelled', false),
        },
        // A retry of this very call (the SDK's own) finds the same session.
        { idempotencyKey: `purchase-${purchaseId}` },
      ),
    );
    purchase.checkoutSessionId = session.id;
    purchase.paymentUrl = session.url;
    await em.nativeUpdate(CreditPurchaseSchema, { id: purchaseId }, { checkoutSessionId: session.id, paymentUrl: session.url });
    return purchase;
  }

  async purchase(accountId: string, purchaseId: string): Promise<CreditPurchase> {
    const found = await this.deps.orm.em.fork().findOne(CreditPurchaseSchema, { id: purchaseId, accountId });
    if (!found) throw notFound('The purchase');
    return found;
  }

  async portal(accountId: string): Promise<{ url: string }> {
    const account = await this.account(accountId);
    if (!account.stripeCustomerId) {
      throw new AppError('NO_BILLING_ACCOUNT', 400, 'The account has never checked out, so it has no billing account yet.');
    }
    const stripe = await this.stripeFor(accountId);
    const customer = await this.ensureCustomer(accountId);
    const session = await callStripe(() => stripe.billingPortal.sessions.create({ customer, return_url: this.deps.config.BILLING_RETURN_URL }));
    return { url: session.url };
  }

  /** The subscription and balances (this month's allowance opened first if the month changed). */
  async subscription(accountId: string): Promise<SubscriptionState> {
    const account = await this.deps.orm.em.fork().transactional((tx) => lockAccount(tx, accountId, new Date()));
    return { account, hasBillingAccount: account.stripeCustomerId !== null };
  }

  /**
   * Asks Stripe for another plan. An upgrade changes the price at once (upgradeTerms), and the
   * account's plan changes when Stripe's update event arrives. A downgrade waits for the end of the
   * subscription's period in a Stripe subscription schedule (scheduleDowngrade): the plan, its limits
   * and its price stay until then, nothing is credited, and Stripe itself renews the subscription on
   * the lower price, whose event moves the plan. A second downgrade replaces the one waiting; an
   * upgrade, or the plan the subscription pays for now, drops it (the schedule is released) and bills
   * nothing for it. A subscription set to end with its period (DELETE) goes on: choosing a plan, the
   * current one included, is choosing to keep paying for it (a fourteenth probe's customer cancelled,
   * then upgraded and paid the difference, and the subscription still ended with the period). The
   * cancellation is undone by its own update first: Stripe accepts only price and proration
   * parameters in an update whose payment may stay pending.
   */
  async changePlan(accountId: string, plan: PaidPlan): Promise<SubscriptionState & { pendingPlan: PaidPlan | null; planChangesAt: Date | null; cancelAtPeriodEnd: boolean }> {
    return this.alone(accountId, (account) => this.changePlanAlone(account, plan));
  }

  /** changePlan, the account's only change of its subscription in progress. */
  private async changePlanAlone(account: Account, plan: PaidPlan): Promise<SubscriptionState & { pendingPlan: PaidPlan | null; planChangesAt: Date | null; cancelAtPeriodEnd: boolean }> {
    const accountId = account.id;
    if (!hasLiveSubscription(account) || !account.subscriptionId) throw noActiveSubscription();
    if (account.plan === plan && !account.subscriptionCancelAtPeriodEnd && account.pendingPlan === null) {
      return { ...(await this.subscription(accountId)), pendingPlan: null, planChangesAt: null, cancelAtPeriodEnd: false };
    }
    const stripe = await this.stripeFor(accountId);
    const subscriptionId = account.subscriptionId;
    let current = await this.billingSubscription(stripe, accountId, subscriptionId);
    if (current.cancel_at_period_end) {
      current = await callStripe(() => stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: false }));
    }
    const answer = async (pendingPlan: PaidPlan | null, planChangesAt: Date | null) => {
      const state = await this.subscription(accountId);
      // An upgrade whose event was handled before this answer is no longer waiting (a twenty-fifth
      // probe's answer showed pending_plan equal to plan).
      const waiting = pendingPlan !== null && state.account.plan !== pendingPlan ? pendingPlan : null;
      return { ...state, pendingPlan: waiting, planChangesAt: waiting ? planChangesAt : null, cancelAtPeriodEnd: current.cancel_at_period_end };
    };
    // The plan Stripe bills now (the account's may lag behind an event on its way).
    const from = planOfSubscription(current) ?? account.plan;
    if (from === plan) {
      // Back to the plan paid for: a change waiting for the period's end is dropped; nothing is billed.
      if (await releaseSchedule(stripe, current)) await this.syncSubscription(stripe, accountId, subscriptionId);
      return answer(null, null);
    }
    if (!isUpgrade(from, plan)) {
      const at = await this.scheduleDowngrade(stripe, accountId, current, plan);
      await this.syncSubscription(stripe, accountId, subscriptionId);
      return answer(plan, at);
    }
    const item = current.items.data[0];
    if (!item) throw new AppError('PAYMENT_PROVIDER_ERROR', 502, 'The Stripe subscription has no item to change.');
    const price = await this.price(planPriceLookupKey(plan));
    // A downgrade waiting for the period's end is dropped: the upgrade applies at once, as without it.
    const released = await releaseSchedule(stripe, current);
    await callStripe(() => stripe.subscriptions.update(subscriptionId, { items: [{ id: item.id, price: price.id }], ...upgradeTerms() }));
    if (released) await this.syncSubscription(stripe, accountId, subscriptionId);
    return answer(plan, null);
  }

  /**
   * Moves the subscription to `plan` at the end of its current period, through a Stripe subscription
   * schedule: the subscription's own (made `from_subscription` when it has none; one attached by a
   * concurrent call meanwhile is taken instead) gets two phases, the current period on the current
   * price, then the lower price for a period, after which the schedule releases the subscription
   * (`end_behavior: release`) to renew on that price as any other. No proration anywhere
   * (`proration_behavior: none`): nothing is credited for the higher price already paid, and nothing
   * is billed before the renewal. Answers when the change takes effect (the current phase's end).
   */
  private async scheduleDowngrade(stripe: Stripe, accountId: string, sub: Stripe.Subscription, plan: PaidPlan): Promise<Date> {
    const item = sub.items.data[0];
    if (!item) throw new AppError('PAYMENT_PROVIDER_ERROR', 502, 'The Stripe subscription has no item to change.');
    const price = await this.price(planPriceLookupKey(plan));
    const schedule = await callStripe(async () => {
      const attached = idOf(sub.schedule);
      if (attached) return stripe.subscriptionSchedules.retrieve(attached);
      try {
        return await stripe.subscriptionSchedules.create({ from_subscription: sub.id });
      } catch (err) {
        if (!isInvalidRequest(err)) throw err;
        const again = idOf((await stripe.subscriptions.retrieve(sub.id)).schedule);
        if (!again) throw err;
        return stripe.subscriptionSchedules.retrieve(again);
      }
    });
    const phase = schedule.current_phase;
    if (schedule.status !== 'active' || !phase) {
      throw new AppError('PAYMENT_PROVIDER_ERROR', 502, `The Stripe subscription schedule ${schedule.id} is ${schedule.status}, not active; retry later.`);
    }
    await callStripe(() =>
      stripe.subscriptionSchedules.update(schedule.id, {
        end_behavior: 'release',
        proration_behavior: 'none',
        metadata: { account_id: accountId },
        phases: [
          { items: [{ price: item.price.id, quantity: item.quantity ?? 1 }], start_date: phase.start_date, end_date: phase.end_date, proration_behavior: 'none' },
          { items: [{ price: price.id, quantity: 1 }], duration: { interval: 'month', interval_count: 1 }, proration_behavior: 'none', metadata: { plan } },
        ],
      }),
    );
    return new Date(phase.end_date * 1000);
  }

  /**
   * Brings the account to its subscription as Stripe now holds it, as the change's own events will
   * (the same lock and rules), so that GET shows at once a change of schedule made here. The events
   * stay the source: a failure here is logged and changes nothing.
   */
  private async syncSubscription(stripe: Stripe, accountId: string, subscriptionId: string): Promise<void> {
    try {
      await this.deps.orm.em.fork().transactional((tx) => applyLatestSubscription(tx, stripe, this.deps.logger, accountId, subscriptionId));
    } catch (err) {
      this.deps.logger.warn({ err, accountId, subscriptionId }, "could not read the subscription back after changing its schedule: Stripe's events bring it");
    }
  }

  /**
   * The account's subscription as Stripe holds it, while it still bills. One that ended at Stripe with
   * its event lost (cancelled at once from the portal), or that Stripe no longer knows while it knows
   * the customer, is applied as its event would be (the account falls to free and may check out
   * again), and the call is 409 NO_ACTIVE_SUBSCRIPTION: Stripe refuses to update it, and every PATCH or
   * DELETE answered 502 "retry later" until the sweep caught the lapse after the period's end, while
   * checkout answered 409 SUBSCRIPTION_EXISTS (an eighteenth probe).
   */
  private async billingSubscription(stripe: Stripe, accountId: string, subscriptionId: string): Promise<Stripe.Subscription> {
    const em = this.deps.orm.em.fork();
    let latest: Stripe.Subscription | 'unknown';
    try {
      latest = await retrieveSubscription(em, stripe, accountId, subscriptionId);
    } catch (err) {
      // Stripe's refusal or outage, or its knowing neither the subscription nor the customer (a wrong key)
      if (fromStripe(err)) throw new AppError('PAYMENT_PROVIDER_ERROR', 502, 'The payment provider refused the call or could not be reached; retry later.', {}, err);
      throw err;
    }
    if (latest !== 'unknown' && LIVE_STATUSES.has(latest.status)) return latest;
    await em.transactional((tx) => applyLatestSubscription(tx, stripe, this.deps.logger, accountId, subscriptionId));
    throw noActiveSubscription();
  }

  /**
   * Cancels at the end of the period: the plan stays until Stripe reports the subscription ended. A
   * downgrade waiting for that end is dropped (its schedule released first: Stripe refuses to change
   * the cancellation of a subscription a schedule manages); the account falls to free then anyway.
   */
  async cancel(accountId: string): Promise<SubscriptionState & { cancelAtPeriodEnd: boolean; pendingPlan: null; planChangesAt: null }> {
    return this.alone(accountId, (account) => this.cancelAlone(account));
  }

  /** cancel, the account's only change of its subscription in progress. */
  private async cancelAlone(account: Account): Promise<SubscriptionState & { cancelAtPeriodEnd: boolean; pendingPlan: null; planChangesAt: null }> {
    const accountId = account.id;
    if (!hasLiveSubscription(account) || !account.subscriptionId) throw noActiveSubscription();
    const stripe = await this.stripeFor(accountId);
    const subscriptionId = account.subscriptionId;
    const current = await this.billingSubscription(stripe, accountId, subscriptionId);
    const released = await releaseSchedule(stripe, current);
    const updated = await callStripe(() => stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: true }));
    // Stored now, not only by its event: a PATCH made before the event came read the subscription as
    // going on, answered so without asking Stripe, and the subscription ended with its period (a
    // twenty-fifth probe). The event, which reads Stripe's latest state, stores the same.
    await this.deps.orm.em
      .fork()
      .getConnection()
      .execute(`update accounts set subscription_cancel_at_period_end = ? where id = ? and subscription_id = ?`, [updated.cancel_at_period_end, accountId, subscriptionId]);
    if (released) await this.syncSubscription(stripe, accountId, subscriptionId);
    return { ...(await this.subscription(accountId)), cancelAtPeriodEnd: updated.cancel_at_period_end, pendingPlan: null, planChangesAt: null };
  }

  /**
   * One delivery of the Stripe webhook: the signature is checked on the raw bytes before anything
   * else; an event handled before is acknowledged and ignored. Settlements go to the purchase's
   * workflow (signal-with-start, so an event that comes before the workflow still settles it);
   * subscription events apply the subscription as Stripe holds it now, so that events in any order
   * end in Stripe's latest state.
   */
  async handleWebhook(raw: Buffer, signature: string | undefined): Promise<{ duplicate: boolean }> {
    const stripe = this.stripe();
    const secret = this.deps.config.STRIPE_WEBHOOK_SECRET;
    if (!secret) throw billingUnavailable();
    if (!signature) throw new AppError('INVALID_SIGNATURE', 400, 'The Stripe-Signature header is missing.');
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(raw, signature, secret);
    } catch (err) {
      throw new AppError('INVALID_SIGNATURE', 400, 'The Stripe-Signature header does not match the body.', {}, err);
    }
    return this.eventsAtOnce(() => this.applyEvent(event));
  }

  /** One authentic event, handled once (see handleWebhook). */
  private async applyEvent(event: Stripe.Event): Promise<{ duplicate: boolean }> {
    const em = this.deps.orm.em.fork();
    if (await em.findOne(StripeEventSchema, { id: event.id })) return { duplicate: true };

    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded':
      case 'checkout.session.async_payment_failed':
      case 'checkout.session.expired': {
        const session = event.data.object;
        if (session.mode === 'payment') {
          const purchaseId = session.metadata?.purchase_id;
          const outcome: PurchaseOutcome | null =
            event.type === 'checkout.session.expired'
              ? 'expired'
              : event.type === 'checkout.session.async_payment_failed'
                ? 'failed'
                : session.payment_status === 'paid'
                  ? 'settled'
                  : null; // completed, paid by a method that settles later: its own event follows
          // The signal is sent before the event is recorded: a delivery that fails in between is
          // retried by Stripe, and a second signal settles nothing twice.
          const paymentIntent = idOf(session.payment_intent);
          if (purchaseId && paymentIntent) {
            await em.execute(`update credit_purchases set payment_intent_id = ? where id = ? and payment_intent_id is null`, [paymentIntent, purchaseId]);
          }
          if (purchaseId && outcome) {
            const account = await purchaseAccount(em, purchaseId, session.metadata?.account_id ?? null);
            if (account === 'live') {
              await this.deps.temporal.signalPurchase(purchaseId, { outcome, eventId: event.id }, this.purchaseWaitMs());
            } else if (outcome === 'settled' && paymentIntent && account === 'deleted') {
              // Paid in the moment its account's deletion closed the payment pages: no account to credit,
              // so the money goes back (it was left to whoever read a warning; a twenty-fifth probe).
              await this.refundUncredited(paymentIntent, purchaseId);
              this.deps.logger.warn({ purchaseId, sessionId: session.id, eventId: event.id }, 'Stripe payment for a purchase of a deleted account: refunded, not credited');
            } else if (outcome === 'settled') {
              // Not a purchase of this service's (another deployment or product on the same Stripe account): not ours to refund.
              this.deps.logger.warn({ purchaseId, sessionId: session.id, eventId: event.id }, 'Stripe payment for a purchase this service does not know: ignored');
            }
          }
          return { duplicate: !(await em.transactional((tx) => recordEvent(tx, event))) };
        }
        const subscriptionId = session.mode === 'subscription' ? idOf(session.subscription) : null;
        const settled = event.type === 'checkout.session.expired' || (event.type === 'checkout.session.completed' && session.status === 'complete');
        return this.applySubscriptionEvent(event, subscriptionId, idOf(session.customer), session.client_reference_id, settled ? session.id : null);
      }
      case 'customer.subscription.created':
      case 'customer.subscription.updated':
      case 'customer.subscription.deleted':
      case 'customer.subscription.paused':
      case 'customer.subscription.resumed':
        return this.applySubscriptionEvent(event, event.data.object.id, idOf(event.data.object.customer), event.data.object.metadata?.account_id ?? null);
      // A schedule made, changed, moved to its next phase or let go: the plan change it holds (a
      // downgrade at the period's end) is read again with its subscription, as for the events above.
      case 'subscription_schedule.created':
      case 'subscription_schedule.updated':
      case 'subscription_schedule.released':
      case 'subscription_schedule.canceled':
      case 'subscription_schedule.completed':
      case 'subscription_schedule.aborted': {
        const schedule = event.data.object;
        return this.applySubscriptionEvent(event, idOf(schedule.subscription) ?? schedule.released_subscription, idOf(schedule.customer), null);
      }
      case 'charge.refunded':
      case 'charge.refund.updated':
      case 'charge.dispute.created':
      case 'charge.dispute.updated':
      case 'charge.dispute.closed':
      case 'charge.dispute.funds_withdrawn':
      case 'charge.dispute.funds_reinstated': {
        const object = event.data.object;
        const chargeId = object.object === 'charge' ? object.id : idOf(object.charge);
        return this.applyPaymentLoss(event, chargeId, idOf(object.payment_intent));
      }
      default:
        return { duplicate: !(await em.transactional((tx) => recordEvent(tx, event))) };
    }
  }

  /**
   * A refund or a dispute of a payment: when the payment bought credits, the credits its lost money
   * bought are taken back (or given back when a dispute is won). The charge and its disputes are read
   * from Stripe as they are now, under the purchase's row lock, so events in any order, repeated or
   * handled at once, end in Stripe's latest state and move each credit once. Payments of subscriptions
   * are not credit purchases: the plan follows the subscription's own events.
   */
  private async applyPaymentLoss(event: Stripe.Event, chargeId: string | null, paymentIntent: string | null): Promise<{ duplicate: boolean }> {
    const stripe = this.stripe();
    const em = this.deps.orm.em.fork();
    const purchaseId = chargeId && paymentIntent ? await this.purchaseOfPaymentIntent(em, stripe, paymentIntent) : null;
    const recorded = await em.transactional(async (tx) => {
      if (!(await recordEvent(tx, event))) return false;
      if (!purchaseId || !chargeId) return true;
      const purchase = await tx.findOne(CreditPurchaseSchema, { id: purchaseId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!purchase) return true;
      const charge = await callStripe(() => stripe.charges.retrieve(chargeId));
      const disputes = await callStripe(() => stripe.disputes.list({ charge: chargeId, limit: 100 }).autoPagingToArray({ limit: 10_000 }));
      const withheld = disputes.filter((d) => !DISPUTE_STATUSES_NOT_WITHHELD.has(d.status)).reduce((sum, d) => sum + d.amount, 0);
      const lost = Math.min(purchase.amount, charge.amount_refunded + withheld);
      if (lost !== purchase.amountLost) {
        this.deps.logger.warn({ purchaseId, chargeId, eventId: event.id, amountLost: lost }, 'credit purchase refunded or disputed: its credits follow the money');
      }
      purchase.amountLost = lost;
      if (purchase.state === 'settled') {
        const now = new Date();
        const account = await lockAccount(tx, purchase.accountId, now);
        if (account.deletedAt === null) reverseLostPayment(tx, purchase, account, now);
      }
      await tx.flush();
      return true;
    });
    return { duplicate: !recorded };
  }

  /**
   * The credit purchase a PaymentIntent paid: stored from its Checkout Session's events, else asked of
   * Stripe (the session that made the PaymentIntent names the purchase in its metadata), then stored.
   */
  private async purchaseOfPaymentIntent(em: EntityManager, stripe: Stripe, paymentIntent: string): Promise<string | null> {
    const known = await em.execute<Array<{ id: string }>>(`select id from credit_purchases where payment_intent_id = ?`, [paymentIntent]);
    if (known[0]) return known[0].id;
    const sessions = await callStripe(() => stripe.checkout.sessions.list({ payment_intent: paymentIntent, limit: 1 }));
    const purchaseId = sessions.data[0]?.metadata?.purchase_id;
    if (!purchaseId) return null;
    await em.execute(`update credit_purchases set payment_intent_id = ? where id = ? and payment_intent_id is null`, [paymentIntent, purchaseId]);
    return purchaseId;
  }

  /**
   * Whether the purchase exists and its account is not deleted. Its row is written before its Checkout
   * Session is made, so an event of the session without it is one of an erased account: the deletion
   * cancelled its workflow, which a signal-with-start would start again for nothing.
   */
  /**
   * Gives back a payment no account was credited for. A failed refund fails the event's delivery,
   * which Stripe retries; the idempotency key makes a retry within 24 h the same refund, and after
   * that Stripe's `charge_already_refunded` means it was made.
   */
  private async refundUncredited(paymentIntent: string, purchaseId: string): Promise<void> {
    const stripe = this.stripe();
    await callStripe(async () => {
      try {
        await stripe.refunds.create({ payment_intent: paymentIntent, metadata: { purchase_id: purchaseId } }, { idempotencyKey: `refund-of-deleted-account-purchase-${purchaseId}` });
      } catch (err) {
        if (!isAlreadyRefunded(err)) throw err;
      }
    });
  }

  /**
   * Records the event and brings its account to the subscription as Stripe holds it now
   * (applySubscriptionOfOwner), in one transaction; the record of a subscription Checkout Session the
   * event reports the end of is closed in it.
   */
  private async applySubscriptionEvent(
    event: Stripe.Event,
    subscriptionId: string | null,
    customerId: string | null,
    accountHint: string | null,
    checkoutSessionId: string | null = null,
  ): Promise<{ duplicate: boolean }> {
    const stripe = this.stripe();
    const recorded = await this.deps.orm.em.fork().transactional(async (tx) => {
      if (!(await recordEvent(tx, event))) return false;
      // Stripe reported the subscription Checkout Session's end: the sweep need not ask about it.
      if (checkoutSessionId) await execIn(tx, `update subscription_checkouts set closed_at = now() where session_id = ? and closed_at is null`, [checkoutSessionId]);
      if (subscriptionId) await applySubscriptionOfOwner(tx, stripe, this.deps.logger, subscriptionId, customerId, accountHint);
      return true;
    });
    return { duplicate: !recorded };
  }
}

/**
 * Brings the account a subscription belongs to (by its customer, the account its checkout named, or
 * the subscription id held) to the subscription as Stripe holds it now, in the caller's transaction.
 * The account's subscription events are serialised before Stripe is asked (a transaction-scoped
 * advisory lock of the account): of two events of one account handled at once, the one that locks
 * second reads the subscription after the first has applied its own reading, so an older state can
 * never land after a newer one (a state read before any lock could: an upgrade's event that stalled
 * after its read, applied after the downgrade's, left a customer paying build on pro). The account's
 * row is locked only once Stripe has answered: paid calls take that lock, and the shared charge
 * statement of every account's small predictions (charge-batch.ts) would otherwise wait out Stripe's
 * answer. Used by the webhook and by the sweep's reading of a checkout whose events never came.
 */
async function applySubscriptionOfOwner(
  tx: EntityManager,
  stripe: Stripe,
  logger: Logger,
  subscriptionId: string,
  customerId: string | null,
  accountHint: string | null,
): Promise<void> {
  const owner =
    (customerId ? await tx.findOne(AccountSchema, { stripeCustomerId: customerId }) : null) ??
    (accountHint ? await tx.findOne(AccountSchema, { id: accountHint, stripeCustomerId: null }) : null) ??
    // the account's own subscription, whose customer was deleted at Stripe and replaced since
    (await tx.findOne(AccountSchema, { subscriptionId }));
  if (!owner || owner.deletedAt !== null) {
    // A subscription made by our checkout (its account named in metadata) for an account deleted
    // since, or already erased: a payment page left open in another tab could still be paid, and
    // the subscription billed every month an account that no longer exists. An account id this
    // service never had is someone else's on the same Stripe account (another deployment, another
    // product): a nineteenth probe's was set to end with its period.
    const hinted = !owner && accountHint ? await tx.findOne(AccountSchema, { id: accountHint }) : null;
    const erased = !owner && accountHint && !hinted ? (await execIn(tx, `select 1 from erased_accounts where id = ?`, [accountHint])).length > 0 : false;
    if (owner || (hinted !== null && hinted.deletedAt !== null) || erased) {
      await endOrphanSubscription(stripe, logger, subscriptionId, owner?.id ?? accountHint);
    } else {
      logger.warn({ subscriptionId, customerId }, 'Stripe subscription of no known account: ignored');
    }
    return;
  }
  await applyLatestSubscription(tx, stripe, logger, owner.id, subscriptionId);
}

/**
 * Ends, with the period just paid, a subscription still live at Stripe whose account was deleted, as
 * the deletion ends the account's own (account-deletion.ts endSubscriptionOf): the customer is not
 * charged again. Inside the event's transaction, so a failed call is delivered again; one already
 * set to end is left alone.
 */
async function endOrphanSubscription(stripe: Stripe, logger: Logger, subscriptionId: string, accountId: string | null): Promise<void> {
  const latest = await callStripe(() => stripe.subscriptions.retrieve(subscriptionId));
  if (!LIVE_STATUSES.has(latest.status) || latest.cancel_at_period_end) return;
  logger.warn({ subscriptionId, accountId }, 'a live Stripe subscription of a deleted account: set to end with its period');
  // Stripe refuses to change a scheduled subscription's cancellation: its schedule is released first.
  await releaseSchedule(stripe, latest);
  await callStripe(() => stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: true }));
}

/**
 * Whether `sub` is another subscription than the account's own, which is live: the account's
 * subscription is asked for at Stripe, as its last event here may be stale.
 */
async function isSecondSubscription(stripe: Stripe, account: Account, sub: Stripe.Subscription): Promise<boolean> {
  const own = account.subscriptionId;
  if (own === null || own === sub.id || !hasLiveSubscription(account)) return false;
  const current = await callStripe(() => stripe.subscriptions.retrieve(own));
  return LIVE_STATUSES.has(current.status);
}

/**
 * Brings the account (locked by the caller, its month opened) to the subscription's state, in the
 * event's transaction: `pending` is the plan change its schedule holds (read by the caller before the
 * account's row was locked), kept on the account while the subscription is live.
 */
async function applySubscription(tx: EntityManager, stripe: Stripe, logger: Logger, account: Account, sub: Stripe.Subscription, pending: PendingChange | null): Promise<void> {
  const customerId = idOf(sub.customer);
  const now = new Date();
  const item = sub.items.data[0];
  const adopt = () => {
    account.subscriptionId = sub.id;
    account.subscriptionStatus = sub.status;
    account.subscriptionPeriodEnd = item ? new Date(item.current_period_end * 1000) : null;
    account.subscriptionCancelAtPeriodEnd = sub.cancel_at_period_end;
    const live = LIVE_STATUSES.has(sub.status);
    account.pendingPlan = live ? (pending?.plan ?? null) : null;
    account.pendingPlanAt = live ? (pending?.at ?? null) : null;
    if (!account.stripeCustomerId && customerId) account.stripeCustomerId = customerId;
  };
  // The account was found by the customer the event named; Stripe's own reading names the owner. A
  // subscription of another customer is not this account's to adopt or cancel as a second one (a
  // twenty-fifth probe's forged event, signed with the webhook secret, gave one account another's
  // plan and had another's subscription cancelled); the account's own, whose customer was replaced,
  // still is.
  if (account.stripeCustomerId && customerId && customerId !== account.stripeCustomerId && account.subscriptionId !== sub.id) {
    logger.warn({ accountId: account.id, subscriptionId: sub.id, customerId }, "a Stripe subscription of another customer than the account's: ignored");
    return;
  }
  if (LIVE_STATUSES.has(sub.status) && (account.plan === 'contract' || (await isSecondSubscription(stripe, account, sub)))) {
    // Two Checkout Sessions paid (or a subscription made outside the service), or a subscription of an
    // account on a contract (a page opened before the contract): the account keeps the plan it has,
    // and the subscription stops at once, prorated, before it can bill again or move the plan.
    // Cancelled inside the event's transaction: if the cancel fails, nothing is recorded and Stripe
    // delivers the event again; a cancelled subscription's later events are not the account's.
    // Asked again under the account's lock: another delivery may have cancelled it meanwhile.
    const fresh = await callStripe(() => stripe.subscriptions.retrieve(sub.id));
    if (LIVE_STATUSES.has(fresh.status)) {
      logger.warn({ accountId: account.id, plan: account.plan, kept: account.subscriptionId, cancelled: sub.id }, 'a second live Stripe subscription, or one of a contract: cancelled');
      await callStripe(() => stripe.subscriptions.cancel(sub.id, { prorate: true }));
    }
  } else if (LIVE_STATUSES.has(sub.status)) {
    adopt();
    const plan = planOfSubscription(sub);
    if (plan) movePlan(tx, account, plan, sub.id, now);
    else logger.warn({ subscriptionId: sub.id }, 'Stripe subscription with no plan_<plan> price: plan unchanged');
  } else if (account.subscriptionId === null || account.subscriptionId === sub.id) {
    // An ended subscription counts only while it is the account's own: a late event of an older
    // subscription never ends the current one.
    adopt();
    if (ENDED_STATUSES.has(sub.status) && account.plan !== 'contract') movePlan(tx, account, 'free', sub.id, now);
  }
  await tx.flush();
}

/**
 * Reads the subscription from Stripe and brings the account to it, in the caller's transaction: the
 * account's subscription events are serialised first (a transaction-scoped advisory lock of the
 * account), so a state read here is never applied after a newer one; the account's row is locked only
 * once Stripe has answered (paid calls take that lock).
 */
async function applyLatestSubscription(tx: EntityManager, stripe: Stripe, logger: Logger, accountId: string, subscriptionId: string): Promise<Account> {
  await execIn(tx, `select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`stripe-subscription:${accountId}`]);
  const latest = await retrieveSubscription(tx, stripe, accountId, subscriptionId);
  // The plan change its schedule holds, read with the subscription, before the account's row is locked.
  const pending = latest !== 'unknown' && LIVE_STATUSES.has(latest.status) ? await pendingChangeOf(stripe, logger, latest) : null;
  const account = await lockAccount(tx, accountId, new Date());
  if (latest === 'unknown') await applyUnknownSubscription(tx, logger, account, subscriptionId);
  else await applySubscription(tx, stripe, logger, account, latest, pending);
  return account;
}

/**
 * The subscription as Stripe holds it, or `unknown` when Stripe answers 404 `resource_missing` while
 * it knows the account's customer (Stripe keeps ended subscriptions and deleted customers' stubs, so
 * this is a subscription removed at Stripe, e.g. with a test mode's data). When Stripe knows the
 * customer no more than the subscription, the service is likely talking to another Stripe account or
 * mode (a wrong STRIPE_SECRET_KEY): that is the operator's to fix, and nothing is changed (the error
 * is thrown: the sweep logs it and asks again in an hour; a webhook delivery is retried by Stripe).
 */
export async function retrieveSubscription(tx: EntityManager, stripe: Stripe, accountId: string, subscriptionId: string): Promise<Stripe.Subscription | 'unknown'> {
  try {
    return await stripe.subscriptions.retrieve(subscriptionId);
  } catch (err) {
    if (!isResourceMissing(err)) throw err;
    const rows = await execIn<{ customer: string | null }>(tx, `select stripe_customer_id as customer from accounts where id = ?`, [accountId]);
    const customer = rows[0]?.customer ?? null;
    if (customer) {
      try {
        await stripe.customers.retrieve(customer);
        return 'unknown';
      } catch (customerErr) {
        if (!isResourceMissing(customerErr)) throw customerErr;
      }
    }
    throw new Error(
      `Stripe knows neither subscription ${subscriptionId} nor customer ${customer ?? '(none)'} of account ${accountId}: is STRIPE_SECRET_KEY the key of the Stripe account (and mode) that billed it? Nothing changed.`,
      { cause: err },
    );
  }
}

/**
 * A subscription of the account that Stripe no longer knows (while it knows the account's customer)
 * bills no one: the account, unless on a contract, falls to free as when its subscription ends (this
 * month's allowance kept, one ledger row), and shows the subscription `canceled`, so that it can
 * subscribe again through Checkout. Only the account's own subscription counts: an older one's changes
 * nothing.
 */
async function applyUnknownSubscription(tx: EntityManager, logger: Logger, account: Account, subscriptionId: string): Promise<void> {
  if (account.subscriptionId !== subscriptionId) return;
  logger.error({ accountId: account.id, subscriptionId, plan: account.plan }, 'Stripe does not know the account\'s subscription (it knows its customer): the account falls to free');
  account.subscriptionStatus = 'canceled';
  account.subscriptionCancelAtPeriodEnd = false;
  account.pendingPlan = null;
  account.pendingPlanAt = null;
  if (account.plan !== 'contract') movePlan(tx, account, 'free', subscriptionId, new Date());
  await tx.flush();
}

/** How long after its period's end a live subscription may go without news from Stripe before it is asked. */
export const SUBSCRIPTION_RECONCILE_GRACE_MS = 60 * 60 * 1000;
/** How long before an account asked about already, whose subscription Stripe still shows past its period, is asked again. */
export const SUBSCRIPTION_RECHECK_MS = 60 * 60 * 1000;
/** Accounts asked about per sweep: each costs one Stripe read. */
export const SUBSCRIPTION_RECONCILE_BATCH = 20;

/**
 * Subscriptions the service still holds live past their period's end plus an hour: Stripe renews a
 * subscription, or ends it, at that moment and reports it with an event; when that event never came
 * (an endpoint down beyond Stripe's three days of retries, an event disabled in the Stripe dashboard),
 * the account kept its paid plan, and a new allowance every month, for ever. Each is read from Stripe
 * and applied as an event would (the same lock and rules): renewed, it gets its new period end; ended,
 * the account falls to free. Run by the sweep, at most SUBSCRIPTION_RECONCILE_BATCH accounts a run, each
 * claimed first (`subscription_checked_at`) and asked again only after SUBSCRIPTION_RECHECK_MS, if
 * Stripe still shows it past its period or the read failed (logged). Answers how many were read.
 */
export async function reconcileLapsedSubscriptions(em: EntityManager, stripe: Stripe | null, logger: Logger, now: Date): Promise<number> {
  if (!stripe) return 0;
  // Claimed before Stripe is asked: a sweep that overlaps this one (or Stripe failing) does not ask
  // about the same accounts again within the hour.
  const due = await em.getConnection().execute<Array<{ id: string; subscription_id: string }>>(
    `update accounts set subscription_checked_at = ?
      where id in (select id from accounts
                    where deleted_at is null and subscription_id is not null and subscription_status in ('active', 'trialing', 'past_due')
                      and subscription_period_end < ? and (subscription_checked_at is null or subscription_checked_at < ?)
                    order by subscription_period_end limit ? for update skip locked)
      returning id, subscription_id`,
    [now, new Date(now.getTime() - SUBSCRIPTION_RECONCILE_GRACE_MS), new Date(now.getTime() - SUBSCRIPTION_RECHECK_MS), SUBSCRIPTION_RECONCILE_BATCH],
  );
  let read = 0;
  for (const row of due) {
    try {
      await em.fork().transactional((tx) => applyLatestSubscription(tx, stripe, logger, row.id, row.subscription_id));
      read += 1;
    } catch (err) {
      logger.warn({ err, accountId: row.id, subscriptionId: row.subscription_id }, 'could not read a lapsed subscription from Stripe: the next sweep asks again');
    }
  }
  return read;
}

/** How long after its creation a subscription Checkout Session not reported by Stripe is asked about (its events normally come within seconds). */
export const CHECKOUT_RECONCILE_AFTER_MS = 10 * 60 * 1000;
/** How long before a subscription Checkout Session still open at Stripe is asked about again. */
export const CHECKOUT_RECHECK_MS = 60 * 60 * 1000;

/**
 * Subscription Checkout Sessions opened here that Stripe has not reported completed or expired ten
 * minutes after they were opened: when `checkout.session.completed` and `customer.subscription.created`
 * never arrive (an endpoint down beyond Stripe's three days of retries, the event types unticked in
 * the dashboard), the account stayed on free while Stripe billed it, until some later event of the
 * subscription came, if one ever did. Each is read from Stripe: completed, its subscription is applied
 * as its event would (the same owner rules, lock and second-subscription guard) and the record closed;
 * expired, closed; still open, asked again an hour later (Stripe ends a session within a day). At most
 * SUBSCRIPTION_RECONCILE_BATCH a run, each claimed first (`checked_at`, `for update skip locked`).
 * Answers how many were read.
 */
export async function reconcileSubscriptionCheckouts(em: EntityManager, stripe: Stripe | null, logger: Logger, now: Date): Promise<number> {
  if (!stripe) return 0;
  const due = await em.getConnection().execute<Array<{ session_id: string; account_id: string }>>(
    `update subscription_checkouts set checked_at = ?
      where session_id in (select session_id from subscription_checkouts
                            where closed_at is null and created_at < ? and (checked_at is null or checked_at < ?)
                            order by created_at limit ? for update skip locked)
      returning session_id, account_id`,
    [now, new Date(now.getTime() - CHECKOUT_RECONCILE_AFTER_MS), new Date(now.getTime() - CHECKOUT_RECHECK_MS), SUBSCRIPTION_RECONCILE_BATCH],
  );
  let read = 0;
  for (const row of due) {
    try {
      const session = await stripe.checkout.sessions.retrieve(row.session_id);
      const subscriptionId = idOf(session.subscription);
      if (session.status === 'open') {
        read += 1;
        continue;
      }
      await em.fork().transactional(async (tx) => {
        if (session.status === 'complete' && subscriptionId) {
          logger.warn({ accountId: row.account_id, sessionId: session.id, subscriptionId }, 'a subscription Checkout Session completed without its event reaching the service: applied from Stripe');
          await applySubscriptionOfOwner(tx, stripe, logger, subscriptionId, idOf(session.customer), session.client_reference_id ?? row.account_id);
        }
        await execIn(tx, `update subscription_checkouts set closed_at = now() where session_id = ?`, [row.session_id]);
      });
      read += 1;
    } catch (err) {
      logger.warn({ err, accountId: row.account_id, sessionId: row.session_id }, 'could not read a subscription Checkout Session from Stripe: the sweep asks again within the hour');
    }
  }
  return read;
}
