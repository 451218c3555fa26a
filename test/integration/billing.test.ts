import { Client as PgClient } from 'pg';
import Stripe from 'stripe';
import { PLAN_PRICES, PLANS } from '../../config/plans';
import { CreditPurchaseSchema, StripeEventSchema } from '../../db/entities';
import { stripeEventsAtOnce } from '../../services/billing';
import { sweepCreditAlerts } from '../../services/credit-alerts';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';
import { accountOf, eventually, ledgerOf, payBuildSubscriptionAs, postEvent, startBillingHarness, WEBHOOK_PATH } from '../support/billing';
import { expectError, type Harness } from '../support/harness';
import type { SweepResult } from '../../workflows/sweep-ended-keys';
import { provisionAccount } from '../../services/accounts';
import { createKey } from '../../services/api-keys';
import { createWorkspace } from '../../services/workspaces';
import { newId } from '../../services/ids';

/**
 * Billing over HTTP: the service's stripe SDK talks to the Stripe stand-in; the stand-in's checkout
 * "pays" and sends signed events to the service, or the tests send them in the order they choose.
 */
describe('billing with Stripe', () => {
  let h: Harness;
  let stripe: StripeStandIn;
  beforeAll(async () => {
    ({ h, stripe } = await startBillingHarness());
  });
  afterAll(() => h.stop());
  afterEach(() => {
    stripe.autoDeliver = true;
  });

  const purchaseState = (adminKey: string, id: string) => h.http.get(`/v1/billing/credits/${id}`).set('X-API-Key', adminKey);
  const settledOrClosed = (adminKey: string, id: string) =>
    eventually(
      () => purchaseState(adminKey, id),
      (r) => r.body.state !== 'pending',
    );

  /**
   * A free account subscribed to build through Checkout, with its subscription's events held back, and
   * a client of the stand-in's API for moving that subscription as the customer portal would.
   */
  async function subscribedToBuildEventsHeld() {
    const { id, subId, adminKey } = await subscribedToBuild();
    stripe.autoDeliver = false;
    const sdk = new Stripe('sk_test_portal', { host: new URL(stripe.url).hostname, port: new URL(stripe.url).port, protocol: 'http' });
    return { id, subId, sdk, adminKey };
  }

  /** The subscription moved to pro at Stripe (as from the portal): its event, held back. */
  async function upgradedToProEventHeld(sdk: Stripe, subId: string): Promise<Stripe.Event> {
    const price = (await sdk.prices.list({ lookup_keys: ['plan_pro'] })).data[0]!;
    const current = await sdk.subscriptions.retrieve(subId);
    await sdk.subscriptions.update(subId, { items: [{ id: current.items.data[0]!.id, price: price.id }] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [upgrade] = stripe.outbox.splice(0);
    expect(upgrade?.type).toBe('customer.subscription.updated');
    return upgrade!;
  }

  /** A free account subscribed to build through Checkout, its subscription's events delivered. */
  async function subscribedToBuild() {
    const account = await h.provision('free');
    const id = account.account.id;
    const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
    await stripe.completeCheckout(checkout.body.id);
    await eventually(() => accountOf(h, id), (a) => a.plan === 'build');
    return { ...account, id, subId: stripe.sessions.get(checkout.body.id)?.subscription as string };
  }

  /** A build-plan account with a pending purchase of `units` credits (events held back when `hold`). */
  async function pendingPurchase(units = 500, hold = true) {
    const account = await h.provision('build');
    const res = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units });
    expect(res.status).toBe(200);
    stripe.autoDeliver = !hold;
    return { ...account, purchase: res.body as { id: string; checkout_session_id: string; payment_url: string; state: string } };
  }

  describe('GET /v1/plans', () => {
    it('lists every plan publicly with price, allowance, quotas and the price of 100 credits (none for free and contract)', async () => {
      const res = await h.http.get('/v1/plans');
      expect(res.status).toBe(200);
      const byName = Object.fromEntries((res.body.data as Array<{ name: string }>).map((p) => [p.name, p]));
      expect(Object.keys(byName)).toEqual(['free', 'build', 'pro', 'growth', 'contract']);
      expect(byName.build).toEqual(
        expect.objectContaining({ monthly_allowance: 20_000, max_models: 10, max_training_rows: 50_000, credit_block_size: 100, credit_block_price: 50, monthly_price: 4900, self_serve: true }),
      );
      expect(byName.free).toEqual(expect.objectContaining({ monthly_allowance: 1_000, credit_block_price: null, self_serve: false }));
      expect(byName.contract).toEqual(expect.objectContaining({ monthly_allowance: null, monthly_price: null, credit_block_price: null }));
      // Stripe charges at least 0.50 USD: one block on build, two on pro (0.80) and growth (0.60).
      expect((res.body.data as Array<{ min_credit_units: number | null }>).map((p) => p.min_credit_units)).toEqual([null, 100, 200, 200, null]);
    });
  });

  describe('checkout and customer', () => {
    it('runs concurrent first checkouts one at a time: each is 200 or 409 BILLING_CHANGE_IN_PROGRESS, one Stripe customer is made, only the newest page stays payable, and the plan does not change at request time (a twenty-seventh probe paid two pages opened at once)', async () => {
      const account = await h.provision('free');
      const answers = await Promise.all([0, 1, 2].map(() => h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' })));
      const made = answers.filter((r) => r.status === 200);
      expect(made.length).toBeGreaterThanOrEqual(1);
      for (const r of answers.filter((a) => a.status !== 200)) expectError(r, 409, 'BILLING_CHANGE_IN_PROGRESS');
      for (const r of made) {
        expect(r.body.id).toMatch(/^cs_test_/);
        expect(r.body.url).toBe(`${stripe.url}/checkout/${r.body.id as string}`);
      }
      const customers = [...stripe.customers.values()].filter((c) => (c.metadata as { account_id?: string }).account_id === account.account.id);
      expect(customers).toHaveLength(1);
      const stored = await accountOf(h, account.account.id);
      expect(stored.stripeCustomerId).toBe(customers[0]!.id);
      expect(stored.plan).toBe('free');
      const open = [...stripe.sessions.values()].filter((cs) => cs.customer === stored.stripeCustomerId && cs.status === 'open');
      expect(open).toHaveLength(1);
      expect(open[0]).toEqual(expect.objectContaining({ mode: 'subscription' }));

      const later = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      expect(stripe.sessions.get(later.body.id)?.customer).toBe(stored.stripeCustomerId);
      expect(stripe.sessions.get(open[0]!.id as string)?.status).toBe('expired');
      expect([...stripe.customers.values()].filter((c) => (c.metadata as { account_id?: string }).account_id === account.account.id)).toHaveLength(1);
    });

    it('answers 409 BILLING_CHANGE_IN_PROGRESS, asking Stripe nothing, to a checkout sent while another is being made, so two payable pages can never be open at once', async () => {
      const account = await h.provision('free');
      const held = stripe.hold('POST', '/v1/checkout/sessions');
      const first = h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' }).then((r) => r);
      await held.arrived;
      const requestsBefore = stripe.requests.length;
      expectError(await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'growth' }), 409, 'BILLING_CHANGE_IN_PROGRESS');
      expect(stripe.requests.length).toBe(requestsBefore);
      held.release();
      const made = await first;
      expect(made.status).toBe(200);
      expect(stripe.sessions.get(made.body.id)?.status).toBe('open');
      const customer = (await accountOf(h, account.account.id)).stripeCustomerId;
      expect([...stripe.sessions.values()].filter((cs) => cs.customer === customer && cs.status === 'open').map((cs) => cs.id)).toEqual([made.body.id]);
    });

    it('refuses a plan that is not offered through Checkout (400) and needs an admin credential', async () => {
      const account = await h.provision('free');
      for (const plan of ['free', 'contract', 'gold', undefined]) {
        expectError(await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan }), 400, 'VALIDATION_ERROR');
      }
      expectError(await h.http.post('/v1/billing/checkout').set('X-API-Key', account.apiKey).send({ plan: 'pro' }), 403, 'ADMIN_KEY_REQUIRED');
      expectError(await h.http.post('/v1/billing/checkout').send({ plan: 'pro' }), 401, 'AUTH_REQUIRED');
      expect((await accountOf(h, account.account.id)).stripeCustomerId).toBeNull();
    });

    it('answers 400 NO_BILLING_ACCOUNT on the portal before any checkout, and a portal URL after', async () => {
      const account = await h.provision('free');
      expectError(await h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey), 400, 'NO_BILLING_ACCOUNT');
      await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      const portal = await h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey);
      expect(portal.status).toBe(200);
      expect(portal.body.url).toMatch(new RegExp(`^${stripe.url}/portal/cus_`));
    });

    it('replaces a customer deleted at Stripe: the subscription it ended moves the account to free, and checkout, purchases and the portal work again on one new customer', async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      await stripe.completeCheckout(checkout.body.id);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'build');
      const deleted = (await accountOf(h, id)).stripeCustomerId as string;
      // As from Stripe's dashboard: the subscription ends at once and its event moves the account to free.
      await stripe.deleteCustomer(deleted);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'free');

      // A checkout and a portal at once (checkouts run one at a time) each need the replacement.
      const [again, portal] = await Promise.all([
        h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' }),
        h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey),
      ]);
      expect([again.status, portal.status]).toEqual([200, 200]);
      const replacement = (await accountOf(h, id)).stripeCustomerId as string;
      expect(replacement).toMatch(/^cus_/);
      expect(replacement).not.toBe(deleted);
      const live = [...stripe.customers.values()].filter((c) => !c.deleted && (c.metadata as { account_id?: string }).account_id === id);
      expect(live.map((c) => c.id)).toEqual([replacement]);
      expect(stripe.sessions.get(again.body.id)?.customer).toBe(replacement);
      expect(portal.body.url).toBe(`${stripe.url}/portal/${replacement}`);
      await stripe.completeCheckout(again.body.id);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'pro');
      const purchase = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 500 });
      expect(purchase.status).toBe(200);
      expect(stripe.sessions.get(purchase.body.checkout_session_id)?.customer).toBe(replacement);
    });

    it("moves the account to free when its subscription's deletion arrives after its deleted customer was replaced", async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      await stripe.completeCheckout(checkout.body.id);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'build');
      stripe.autoDeliver = false;
      const held = await stripe.deleteCustomer((await accountOf(h, id)).stripeCustomerId as string);
      stripe.outbox.length = 0;
      // build has a unit price: a purchase made before the events arrive replaces the customer
      const purchase = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 500 });
      expect(purchase.status).toBe(200);
      expect((await accountOf(h, id)).plan).toBe('build');
      for (const e of held) expect(await stripe.send(e)).toBe(200);
      expect((await accountOf(h, id)).plan).toBe('free');
    });

    it("counts each account's calls that ask Stripe (30 in 10 minutes): one more is 429 RATE_LIMITED with Retry-After and asks Stripe nothing, and another account is not held back", async () => {
      const account = await h.provision('build');
      const other = await h.provision('build');
      await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
      await h.http.post('/v1/billing/checkout').set('X-API-Key', other.adminKey).send({ plan: 'pro' });
      for (let i = 0; i < 28; i += 1) expect((await h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey)).status).toBe(200);
      expect((await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 500 })).status).toBe(200);
      const asked = stripe.requests.length;
      for (const refused of [
        await h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey),
        await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 500 }),
        await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'growth' }),
      ]) {
        expectError(refused, 429, 'RATE_LIMITED');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      }
      expect(stripe.requests.length).toBe(asked);
      expect((await h.http.post('/v1/billing/portal').set('X-API-Key', other.adminKey)).status).toBe(200);
    });
  });

  describe('subscription', () => {
    it('answers 409 NO_ACTIVE_SUBSCRIPTION to PATCH and DELETE without a subscription, and GET shows the free plan', async () => {
      const account = await h.provision('free');
      expectError(await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'pro' }), 409, 'NO_ACTIVE_SUBSCRIPTION');
      expectError(await h.http.delete('/v1/billing/subscription').set('X-API-Key', account.adminKey), 409, 'NO_ACTIVE_SUBSCRIPTION');
      const res = await h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(
        expect.objectContaining({ plan: 'free', status: 'none', subscription_id: null, billing_account: false, monthly_allowance: 1000, allowance_remaining: 1000, purchased_balance: 0, credits_remaining: 1000 }),
      );
    });

    it("follows Stripe: created → build (allowance raised at once), upgraded → pro, downgraded at the period's end (this month's allowance kept), cancelled at period end, deleted → free; one ledger row each", async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const sub = () => h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      // 300 of the free allowance already used this month.
      await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 700 where id = ?`, [id]);

      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      await stripe.completeCheckout(checkout.body.id);
      const built = await eventually(sub, (r) => r.body.plan === 'build');
      expect(built.body).toEqual(expect.objectContaining({ plan: 'build', status: 'active', monthly_allowance: 20_000, allowance_remaining: 700 + 19_000, cancel_at_period_end: false, billing_account: true }));
      expect(built.body.subscription_id).toMatch(/^sub_/);
      expect(Date.parse(built.body.current_period_end)).toBeGreaterThan(Date.now());
      expectError(await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' }), 409, 'SUBSCRIPTION_EXISTS');

      const upgrade = await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
      expect(upgrade.status).toBe(200);
      expect(upgrade.body.pending_plan).toBe('pro');
      const pro = await eventually(sub, (r) => r.body.plan === 'pro');
      expect(pro.body).toEqual(expect.objectContaining({ monthly_allowance: 200_000, allowance_remaining: 19_700 + 180_000 }));
      expect((await accountOf(h, id)).plan).toBe('pro');

      const asked = await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      expect(asked.body).toEqual(expect.objectContaining({ plan: 'pro', pending_plan: 'build', plan_changes_at: pro.body.current_period_end }));
      await stripe.endPeriod(built.body.subscription_id);
      const down = await eventually(sub, (r) => r.body.plan === 'build');
      expect(down.body).toEqual(expect.objectContaining({ monthly_allowance: 20_000, allowance_remaining: 199_700, pending_plan: null }));

      const cancel = await h.http.delete('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      expect(cancel.status).toBe(200);
      expect(cancel.body).toEqual(expect.objectContaining({ plan: 'build', cancel_at_period_end: true }));
      await eventually(sub, (r) => r.body.cancel_at_period_end === true);
      expect((await sub()).body.plan).toBe('build');

      await stripe.endPeriod(built.body.subscription_id);
      const ended = await eventually(sub, (r) => r.body.plan === 'free');
      expect(ended.body).toEqual(expect.objectContaining({ plan: 'free', status: 'canceled', monthly_allowance: PLANS.free.monthlyAllowance, allowance_remaining: 199_700 }));
      expectError(await h.http.delete('/v1/billing/subscription').set('X-API-Key', account.adminKey), 409, 'NO_ACTIVE_SUBSCRIPTION');
      expectError(await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'pro' }), 409, 'NO_ACTIVE_SUBSCRIPTION');

      const subId = built.body.subscription_id as string;
      expect(await ledgerOf(h, id, ['adjustment'])).toEqual([
        { kind: 'adjustment', operation: 'plan_upgrade', allowanceDelta: 19_000, balanceDelta: 0, reference: `${subId}:build` },
        { kind: 'adjustment', operation: 'plan_upgrade', allowanceDelta: 180_000, balanceDelta: 0, reference: `${subId}:pro` },
        { kind: 'adjustment', operation: 'plan_downgrade', allowanceDelta: 0, balanceDelta: 0, reference: `${subId}:build` },
        { kind: 'adjustment', operation: 'plan_downgrade', allowanceDelta: 0, balanceDelta: 0, reference: `${subId}:free` },
      ]);
      // The next month opens at the new plan's allowance.
      await h.orm.em.fork().getConnection().execute(`update accounts set allowance_period = '2020-01' where id = ?`, [id]);
      expect((await sub()).body).toEqual(expect.objectContaining({ allowance_remaining: 1_000, monthly_allowance: 1_000 }));
    });

    it('grants a higher plan’s allowance once a month: moving down and up again adds nothing more (two round trips)', async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const sub = () => h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      await stripe.completeCheckout(checkout.body.id);
      await eventually(sub, (r) => r.body.plan === 'build');
      const subId = stripe.sessions.get(checkout.body.id)?.subscription as string;
      for (let round = 0; round < 2; round++) {
        await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
        const pro = await eventually(sub, (r) => r.body.plan === 'pro');
        expect(pro.body).toEqual(expect.objectContaining({ monthly_allowance: 200_000, allowance_remaining: 200_000 }));
        // the downgrade takes effect at the subscription's period end, within the same allowance month
        await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'build' });
        await stripe.endPeriod(subId);
        const build = await eventually(sub, (r) => r.body.plan === 'build');
        expect(build.body).toEqual(expect.objectContaining({ monthly_allowance: 20_000, allowance_remaining: 200_000 }));
      }
      // growth brings 800,000 above the month's largest allowance (pro's), once
      await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'growth' });
      expect((await eventually(sub, (r) => r.body.plan === 'growth')).body.allowance_remaining).toBe(1_000_000);
      const raises = (await ledgerOf(h, id, ['adjustment'])).map((r) => r.allowanceDelta);
      expect(raises).toEqual([19_000, 180_000, 0, 0, 0, 800_000]);
      expect((await accountOf(h, id)).allowanceRemaining).toBe(1_000_000);
    });

    it('keeps one subscription: a second Checkout Session expires the open one, and a second subscription paid anyway is cancelled without moving the plan', async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const first = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
      const second = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      expect(stripe.sessions.get(first.body.id)?.status).toBe('expired');
      expect(stripe.sessions.get(second.body.id)?.status).toBe('open');
      await expect(stripe.completeCheckout(first.body.id)).rejects.toThrow(/expired/);
      await stripe.completeCheckout(second.body.id);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'build');
      const kept = (await accountOf(h, id)).subscriptionId as string;

      // a session opened outside the service (or in a race with the expiry) and paid: a second subscription
      const customer = (await accountOf(h, id)).stripeCustomerId as string;
      const sdk = new Stripe('sk_test_other', { host: new URL(stripe.url).hostname, port: new URL(stripe.url).port, protocol: 'http' });
      const pro = (await sdk.prices.list({ lookup_keys: ['plan_pro'] })).data[0]!;
      const outside = await sdk.checkout.sessions.create({
        mode: 'subscription',
        customer,
        line_items: [{ price: pro.id, quantity: 1 }],
        subscription_data: { metadata: { account_id: id, plan: 'pro' } },
        success_url: 'http://127.0.0.1/ok',
      });
      await stripe.completeCheckout(outside.id);
      const extra = stripe.sessions.get(outside.id)?.subscription as string;
      await eventually(async () => stripe.subscriptions.get(extra)?.status, (status) => status === 'canceled');
      const stored = await accountOf(h, id);
      expect(stored).toEqual(expect.objectContaining({ plan: 'build', subscriptionId: kept, monthlyAllowance: 20_000, allowanceRemaining: 20_000 }));
      expect(stripe.subscriptions.get(kept)?.status).toBe('active');
      expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${kept}:build`]);
    });

    it('ends in Stripe’s latest state whatever the order of subscription events, and applies each event once', async () => {
      const account = await h.provision('free');
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      stripe.autoDeliver = false;
      await stripe.completeCheckout(checkout.body.id);
      const subId = stripe.sessions.get(checkout.body.id)?.subscription as string;
      // The customer changes plan in the billing portal: Stripe's own update, not ours.
      const sdk = new Stripe('sk_test_portal', { host: new URL(stripe.url).hostname, port: new URL(stripe.url).port, protocol: 'http' });
      const growth = (await sdk.prices.list({ lookup_keys: ['plan_growth'] })).data[0]!;
      const current = await sdk.subscriptions.retrieve(subId);
      const update = await sdk.subscriptions.update(subId, { items: [{ id: current.items.data[0]!.id, price: growth.id }] });
      expect(update.items.data[0]?.price.lookup_key).toBe('plan_growth');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const events = stripe.outbox.splice(0);
      expect(events.map((e) => e.type)).toEqual(['customer.subscription.created', 'checkout.session.completed', 'customer.subscription.updated']);
      // Newest first, then everything again.
      for (const e of [...events].reverse()) expect((await postEvent(h, e, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
      for (const e of events) expect((await postEvent(h, e, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: true });
      const stored = await accountOf(h, account.account.id);
      expect(stored.plan).toBe('growth');
      expect(stored.allowanceRemaining).toBe(1_000_000);
      expect((await ledgerOf(h, account.account.id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:growth`]);
    });

    it('bills an upgrade for what the allowance rules grant: on a period\'s last day it starts a new period, invoiced the new price less the unused part of the old (a fourteenth probe: build to growth on the last day paid 1/30 of the difference for 980,000 credits); a downgrade changes no price before the period’s end, so nothing is credited', async () => {
      const { id, subId, adminKey } = await subscribedToBuild();
      // 29 of the period's 30 days are gone
      const item = (stripe.subscriptions.get(subId)!.items as { data: Array<{ current_period_start: number; current_period_end: number }> }).data[0]!;
      item.current_period_start -= 29 * 86_400;
      item.current_period_end -= 29 * 86_400;
      const seen = stripe.prorations.length;
      expect((await h.http.patch('/v1/billing/subscription').set('X-API-Key', adminKey).send({ plan: 'growth' })).status).toBe(200);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'growth');
      const upgrade = stripe.prorations[seen]!;
      expect(upgrade).toEqual(expect.objectContaining({ subscription: subId, invoicedNow: true, periodRestarted: true, behavior: 'always_invoice' }));
      // growth's 999 USD less the unused thirtieth of build's 49 USD, where Stripe's default billed (999 − 49) / 30 ≈ 31.67 USD
      const unusedBuild = PLAN_PRICES.build.monthly! / 30;
      expect(Math.abs(upgrade.amount - (PLAN_PRICES.growth.monthly! - unusedBuild))).toBeLessThan(2);
      expect(item.current_period_end - Date.now() / 1000).toBeGreaterThan(29.9 * 86_400);

      // a downgrade waits for the period's end (billing-downgrade.test.ts): no price changes now, nothing is prorated or credited
      const down = await h.http.patch('/v1/billing/subscription').set('X-API-Key', adminKey).send({ plan: 'pro' });
      expect(down.body).toEqual(expect.objectContaining({ plan: 'growth', pending_plan: 'pro' }));
      expect(stripe.prorations.slice(seen + 1)).toEqual([]);
      expect((stripe.subscriptions.get(subId)!.items as { data: Array<{ price: { lookup_key: string } }> }).data[0]!.price.lookup_key).toBe('plan_growth');
    });

    it('ends in Stripe’s latest state when two events of one subscription are handled at once: an upgrade’s event that stalls before its transaction cannot undo the downgrade applied meanwhile', async () => {
      const { id, subId, sdk } = await subscribedToBuildEventsHeld();
      const move = async (plan: string) => {
        const price = (await sdk.prices.list({ lookup_keys: [`plan_${plan}`] })).data[0]!;
        const current = await sdk.subscriptions.retrieve(subId);
        await sdk.subscriptions.update(subId, { items: [{ id: current.items.data[0]!.id, price: price.id }] });
        await new Promise((resolve) => setTimeout(resolve, 50));
        const [event] = stripe.outbox.splice(0);
        expect(event?.type).toBe('customer.subscription.updated');
        return event!;
      };
      const upgrade = await move('pro');
      // The upgrade's delivery stalls just before it records its event (another transaction holds that id)...
      const blocker = new PgClient({ connectionString: h.config.DATABASE_URL });
      await blocker.connect();
      await blocker.query('begin');
      await blocker.query(`insert into stripe_events (id, type, created_at) values ($1, $2, now())`, [upgrade.id, upgrade.type]);
      const stalled = postEvent(h, upgrade, stripe.webhookSecret).then((res) => res);
      const waiting = async () =>
        (
          await h.orm.em
            .fork()
            .getConnection()
            .execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike 'insert into stripe_events%'`)
        )[0]!.n;
      expect(await eventually(waiting, (n) => n > 0)).toBe(1);
      // ...while the customer moves back to build and that event is handled in full.
      const downgrade = await move('build');
      expect((await postEvent(h, downgrade, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
      await blocker.query('rollback');
      await blocker.end();
      expect((await stalled).body).toEqual({ received: true, duplicate: false });
      const stored = await accountOf(h, id);
      expect([stored.plan, stored.monthlyAllowance]).toEqual(['build', 20_000]);
      expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:build`]);
    });

    it("does not hold the account's row while a subscription event waits for Stripe's answer (paid calls, which lock it, go on)", async () => {
      const { id, subId, sdk } = await subscribedToBuildEventsHeld();
      const upgrade = await upgradedToProEventHeld(sdk, subId);
      const held = stripe.hold('GET', `/v1/subscriptions/${subId}`);
      const delivered = postEvent(h, upgrade, stripe.webhookSecret).then((res) => res);
      await held.arrived;
      const other = new PgClient({ connectionString: h.config.DATABASE_URL });
      await other.connect();
      try {
        await other.query('begin');
        // NOWAIT: refused at once (55P03) if the event's transaction held the row.
        const locked = await other.query(`select id from accounts where id = $1 for update nowait`, [id]);
        expect(locked.rows).toEqual([{ id }]);
        await other.query('rollback');
      } finally {
        await other.end();
        held.release();
      }
      expect((await delivered).body).toEqual({ received: true, duplicate: false });
      expect((await accountOf(h, id)).plan).toBe('pro');
    });

    it("keeps the plan when the subscription's price has no plan_<plan> lookup key, instead of reading the checkout's plan from its metadata (a twenty-fifth probe: a growth customer whose price lost its key was moved to the build it had checked out with)", async () => {
      const { id, subId, adminKey } = await subscribedToBuild();
      const up = await h.http.patch('/v1/billing/subscription').set('X-API-Key', adminKey).send({ plan: 'growth' });
      expect(up.status).toBe(200);
      await eventually(() => accountOf(h, id), (a) => a.plan === 'growth');
      // the operator's new growth price took the lookup key over: the subscription's price has none
      const item = (stripe.subscriptions.get(subId)!.items as { data: Array<{ price: Record<string, unknown> }> }).data[0]!;
      item.price = { ...item.price, lookup_key: null };
      expect((stripe.subscriptions.get(subId)!.metadata as { plan: string }).plan).toBe('build');
      await stripe.setSubscriptionStatus(subId, 'past_due');
      const after = await eventually(() => accountOf(h, id), (a) => a.subscriptionStatus === 'past_due');
      expect([after.plan, after.monthlyAllowance]).toEqual(['growth', PLANS.growth.monthlyAllowance]);
    });

    it("ignores a subscription event whose subscription Stripe says is another customer's: the account the event named neither adopts it nor cancels it as a second subscription (a twenty-fifth probe's forged events)", async () => {
      const owner = await subscribedToBuild();
      const other = await subscribedToBuild();
      const otherBefore = await accountOf(h, other.id);
      const event = structuredClone(stripe.events.filter((e) => e.type.startsWith('customer.subscription.') && (e.data.object as { id: string }).id === owner.subId).at(-1)!);
      (event as { id: string }).id = `evt_forged_${owner.subId}`;
      (event.data.object as { customer: string }).customer = otherBefore.stripeCustomerId!;
      expect((await postEvent(h, event, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
      const otherAfter = await accountOf(h, other.id);
      expect([otherAfter.plan, otherAfter.subscriptionId, otherAfter.monthlyAllowance]).toEqual([otherBefore.plan, otherBefore.subscriptionId, otherBefore.monthlyAllowance]);
      expect(stripe.subscriptions.get(owner.subId)!.status).toBe('active');
      expect((await accountOf(h, owner.id)).plan).toBe('build');
    });

    it("handles at most a quarter of the database pool's worth of Stripe events at once: a burst waiting on a slow Stripe leaves the pool to the routes, and every event is then applied once (a twenty-fourth probe: each event holds a connection while Stripe answers)", async () => {
      const { id, subId, sdk } = await subscribedToBuildEventsHeld();
      const apiKey = (await h.provision('build')).apiKey;
      const upgrade = await upgradedToProEventHeld(sdk, subId);
      // Stripe answers none of the burst's reads of the subscription until released.
      const burst = h.config.DATABASE_POOL_MAX + 2;
      const holds = Array.from({ length: burst }, () => stripe.hold('GET', `/v1/subscriptions/${subId}`));
      const delivered = Array.from({ length: burst }, (_, i) => postEvent(h, { ...upgrade, id: `${upgrade.id}_${i}` }, stripe.webhookSecret).then((res) => res));
      await holds[0]!.arrived;
      await new Promise((resolve) => setTimeout(resolve, 500));
      try {
        const listed = await Promise.race([
          h.http.get('/v1/models').set('X-API-Key', apiKey).then((res) => res.status),
          new Promise((resolve) => setTimeout(() => resolve('no answer within 10 s'), 10_000)),
        ]);
        expect(listed).toBe(200);
        const [inFlight] = await h.orm.em
          .fork()
          .getConnection()
          .execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle' and query ilike '%pg_advisory_xact_lock%'`);
        expect(inFlight!.n).toBeLessThanOrEqual(stripeEventsAtOnce(h.config.DATABASE_POOL_MAX));
      } finally {
        for (const hold of holds) hold.release();
      }
      expect((await Promise.all(delivered)).map((res) => res.body)).toEqual(Array.from({ length: burst }, () => ({ received: true, duplicate: false })));
      expect((await accountOf(h, id)).plan).toBe('pro');
      // the checkout's move to build, then the upgrade once
      expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:build`, `${subId}:pro`]);
    });

    it('answers 409 NO_ACTIVE_SUBSCRIPTION to a change or cancellation of a subscription that ended at Stripe with its event lost, and applies what Stripe holds, so that checkout works again (an eighteenth probe: 502 "retry later" on every try until the period ended, and checkout 409 SUBSCRIPTION_EXISTS)', async () => {
      for (const first of ['patch', 'delete'] as const) {
        const { id, subId, adminKey } = await subscribedToBuildEventsHeld();
        // Cancelled at once (from the portal); its customer.subscription.deleted never reaches the service.
        await stripe.setSubscriptionStatus(subId, 'canceled');
        stripe.outbox.length = 0;
        stripe.autoDeliver = true;
        const change = () => h.http.patch('/v1/billing/subscription').set('X-API-Key', adminKey).send({ plan: 'pro' });
        const cancel = () => h.http.delete('/v1/billing/subscription').set('X-API-Key', adminKey);
        expectError(await (first === 'patch' ? change() : cancel()), 409, 'NO_ACTIVE_SUBSCRIPTION');
        expect(await accountOf(h, id)).toEqual(expect.objectContaining({ plan: 'free', subscriptionId: subId, subscriptionStatus: 'canceled' }));
        expectError(await (first === 'patch' ? cancel() : change()), 409, 'NO_ACTIVE_SUBSCRIPTION');
        const shown = await h.http.get('/v1/billing/subscription').set('X-API-Key', adminKey);
        expect(shown.body).toEqual(expect.objectContaining({ plan: 'free', status: 'canceled' }));
        expect((await h.http.post('/v1/billing/checkout').set('X-API-Key', adminKey).send({ plan: 'build' })).status).toBe(200);
      }
    });

    it('falls back to free when Stripe marks the subscription unpaid', async () => {
      const account = await h.provision('free');
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
      await stripe.completeCheckout(checkout.body.id);
      await eventually(() => accountOf(h, account.account.id), (a) => a.plan === 'pro');
      await stripe.setSubscriptionStatus(stripe.sessions.get(checkout.body.id)?.subscription as string, 'unpaid');
      const after = await eventually(() => accountOf(h, account.account.id), (a) => a.plan === 'free');
      expect(after).toEqual(expect.objectContaining({ plan: 'free', subscriptionStatus: 'unpaid', monthlyAllowance: 1000 }));
    });

    it('keeps a subscription set to end when the customer changes or re-chooses its plan: PATCH clears cancel_at_period_end, so a paid upgrade is not ended with the period', async () => {
      const account = await h.provision('free');
      const id = account.account.id;
      const sub = () => h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      await stripe.completeCheckout(checkout.body.id);
      const built = await eventually(sub, (r) => r.body.plan === 'build');
      const subId = built.body.subscription_id as string;

      // Cancelled, then the same plan chosen again: the subscription goes on.
      expect((await h.http.delete('/v1/billing/subscription').set('X-API-Key', account.adminKey)).body.cancel_at_period_end).toBe(true);
      await eventually(sub, (r) => r.body.cancel_at_period_end === true);
      const again = await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'build' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(expect.objectContaining({ plan: 'build', cancel_at_period_end: false, pending_plan: null }));
      expect(stripe.subscriptions.get(subId)?.cancel_at_period_end).toBe(false);
      await eventually(sub, (r) => r.body.cancel_at_period_end === false);

      // Cancelled, then upgraded: the upgrade is paid for, and the subscription goes on past the period.
      await h.http.delete('/v1/billing/subscription').set('X-API-Key', account.adminKey);
      await eventually(sub, (r) => r.body.cancel_at_period_end === true);
      const upgrade = await h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: 'pro' });
      expect(upgrade.status).toBe(200);
      expect(upgrade.body.cancel_at_period_end).toBe(false);
      // pro waits for Stripe's confirmation, unless its event was handled before the answer was made
      expect([upgrade.body.plan, upgrade.body.pending_plan]).toEqual(upgrade.body.plan === 'pro' ? ['pro', null] : ['build', 'pro']);
      await eventually(sub, (r) => r.body.plan === 'pro' && r.body.cancel_at_period_end === false);
      await stripe.endPeriod(subId);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await accountOf(h, id)).toEqual(expect.objectContaining({ plan: 'pro', subscriptionStatus: 'active' }));
    });

    it('keeps a contract account on its contract: checkout answers 409 PLAN_BY_CONTRACT and asks Stripe nothing, and a subscription paid anyway (a page opened earlier) is cancelled without moving the plan', async () => {
      const contract = await provisionAccount(h.orm.em.fork(), { email: `${newId('account').toLowerCase()}@example.test`, plan: 'contract', contractAllowance: 5_000_000 });
      const id = contract.account.id;
      const before = stripe.requests.length;
      expectError(await h.http.post('/v1/billing/checkout').set('X-API-Key', contract.adminKey).send({ plan: 'build' }), 409, 'PLAN_BY_CONTRACT');
      expect(stripe.requests.length).toBe(before);

      // A session opened while the account was not on a contract yet (made here through the stand-in, as Checkout would).
      const sdk = new Stripe('sk_test_other', { host: new URL(stripe.url).hostname, port: new URL(stripe.url).port, protocol: 'http' });
      const customer = await sdk.customers.create({ email: contract.account.email });
      await h.orm.em.fork().getConnection().execute(`update accounts set stripe_customer_id = ? where id = ?`, [customer.id, id]);
      const subId = await payBuildSubscriptionAs(stripe, sdk, customer.id, id);
      await eventually(async () => stripe.subscriptions.get(subId)?.status, (status) => status === 'canceled');
      expect(stripe.subscriptions.get(subId)?.status).toBe('canceled');
      // A contract of 5,000,000 credits a month had become build (20,000 a month from the next period, 10 models).
      expect(await accountOf(h, id)).toEqual(expect.objectContaining({ plan: 'contract', monthlyAllowance: 5_000_000, allowanceRemaining: 5_000_000 }));
      expect(await ledgerOf(h, id, ['adjustment'])).toEqual([]);
    });

    it("asks Stripe about a subscription still live here an hour past its period's end: one whose end was never reported falls to free, one whose renewal was never reported takes its new period; each is asked once", async () => {
      const sweep = () =>
        h.client.workflow.execute<() => Promise<SweepResult>>('sweepEndedKeysWorkflow', { taskQueue: h.taskQueue, workflowId: `test-sweep-${Date.now()}-${Math.random()}` });
      const lapse = (id: string) =>
        h.orm.em.fork().getConnection().execute(`update accounts set subscription_period_end = now() - interval '2 hours' where id = ?`, [id]);
      const ended = await subscribedToBuildEventsHeld();
      stripe.autoDeliver = true;
      const renewed = await subscribedToBuildEventsHeld();
      // Events held from here on, and never delivered. One is cancelled at period end, then ended at
      // Stripe; the other is renewed at Stripe.
      await ended.sdk.subscriptions.update(ended.subId, { cancel_at_period_end: true });
      await stripe.endPeriod(ended.subId);
      await stripe.endPeriod(renewed.subId);
      stripe.outbox.length = 0;
      await lapse(ended.id);
      await lapse(renewed.id);
      expect((await accountOf(h, ended.id)).plan).toBe('build');

      const before = stripe.requests.length;
      expect((await sweep()).subscriptionsReconciled).toBeGreaterThanOrEqual(2);
      expect(await accountOf(h, ended.id)).toEqual(expect.objectContaining({ plan: 'free', subscriptionStatus: 'canceled', monthlyAllowance: PLANS.free.monthlyAllowance }));
      const renewedAfter = await accountOf(h, renewed.id);
      expect(renewedAfter).toEqual(expect.objectContaining({ plan: 'build', subscriptionStatus: 'active' }));
      expect(renewedAfter.subscriptionPeriodEnd!.getTime()).toBeGreaterThan(Date.now() + 20 * 86_400_000);
      expect(await ledgerOf(h, ended.id, ['adjustment'])).toEqual([
        expect.objectContaining({ operation: 'plan_upgrade', reference: `${ended.subId}:build` }),
        expect.objectContaining({ operation: 'plan_downgrade', reference: `${ended.subId}:free` }),
      ]);
      const reads = (subId: string) => stripe.requests.slice(before).filter((r) => r === `GET /v1/subscriptions/${subId}`).length;
      expect(reads(ended.subId)).toBe(1);
      expect(reads(renewed.subId)).toBe(1);
      // Neither is asked again: one is no longer live, the other's period lies ahead.
      await sweep();
      expect(reads(ended.subId)).toBe(1);
      expect(reads(renewed.subId)).toBe(1);
    });
    it("moves to free an account whose subscription Stripe no longer knows (while it knows its customer), and changes nothing when Stripe knows neither (another Stripe account's key)", async () => {
      const sweep = () =>
        h.client.workflow.execute<() => Promise<SweepResult>>('sweepEndedKeysWorkflow', { taskQueue: h.taskQueue, workflowId: `test-sweep-${Date.now()}-${Math.random()}` });
      const lapse = (id: string) =>
        h.orm.em.fork().getConnection().execute(`update accounts set subscription_period_end = now() - interval '2 hours' where id = ?`, [id]);
      const gone = await subscribedToBuildEventsHeld();
      stripe.autoDeliver = true;
      const foreign = await subscribedToBuildEventsHeld();
      // Removed at Stripe (a test mode's data deleted); the other account's customer is unknown too.
      stripe.subscriptions.delete(gone.subId);
      stripe.subscriptions.delete(foreign.subId);
      stripe.customers.delete((await accountOf(h, foreign.id)).stripeCustomerId!);
      await lapse(gone.id);
      await lapse(foreign.id);

      await sweep();
      expect(await accountOf(h, gone.id)).toEqual(
        expect.objectContaining({ plan: 'free', subscriptionId: gone.subId, subscriptionStatus: 'canceled', monthlyAllowance: PLANS.free.monthlyAllowance }),
      );
      expect(await ledgerOf(h, gone.id, ['adjustment'])).toEqual([
        expect.objectContaining({ operation: 'plan_upgrade', reference: `${gone.subId}:build` }),
        expect.objectContaining({ operation: 'plan_downgrade', reference: `${gone.subId}:free` }),
      ]);
      const shown = await h.http.get('/v1/billing/subscription').set('X-API-Key', gone.adminKey);
      expect(shown.body).toEqual(expect.objectContaining({ plan: 'free', status: 'canceled', subscription_id: gone.subId }));
      // It can subscribe again.
      expect((await h.http.post('/v1/billing/checkout').set('X-API-Key', gone.adminKey).send({ plan: 'build' })).status).toBe(200);
      expect(await accountOf(h, foreign.id)).toEqual(expect.objectContaining({ plan: 'build', subscriptionStatus: 'active' }));
      expect(await ledgerOf(h, foreign.id, ['adjustment'])).toHaveLength(1);
    });

    it("asks Stripe about a subscription checkout whose events never came: a paid one moves the account to its plan once, an expired one is closed, an open one waits", async () => {
      const sweep = () =>
        h.client.workflow.execute<() => Promise<SweepResult>>('sweepEndedKeysWorkflow', { taskQueue: h.taskQueue, workflowId: `test-sweep-${Date.now()}-${Math.random()}` });
      const age = (sessionId: string) =>
        h.orm.em.fork().getConnection().execute(`update subscription_checkouts set created_at = now() - interval '11 minutes' where session_id = ?`, [sessionId]);
      const open = async () => {
        const account = await h.provision('free');
        const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan: 'build' });
        expect(checkout.status).toBe(200);
        return { account, sessionId: checkout.body.id as string };
      };
      stripe.autoDeliver = false;
      const paid = await open();
      const expired = await open();
      const waiting = await open();
      // Stripe bills the first and ends the second; none of their events ever reaches the service.
      await stripe.completeCheckout(paid.sessionId);
      await stripe.expireSession(expired.sessionId);
      stripe.outbox.length = 0;
      const subId = stripe.sessions.get(paid.sessionId)?.subscription as string;
      expect(stripe.subscriptions.get(subId)?.status).toBe('active');
      expect((await accountOf(h, paid.account.account.id)).plan).toBe('free');

      // Not asked about before ten minutes: its event normally comes within seconds.
      const before = stripe.requests.length;
      await sweep();
      const reads = (sessionId: string) => stripe.requests.slice(before).filter((r) => r === `GET /v1/checkout/sessions/${sessionId}`).length;
      expect(reads(paid.sessionId)).toBe(0);

      for (const c of [paid, expired, waiting]) await age(c.sessionId);
      await sweep();
      expect(await accountOf(h, paid.account.account.id)).toEqual(
        expect.objectContaining({ plan: 'build', subscriptionId: subId, subscriptionStatus: 'active', monthlyAllowance: PLANS.build.monthlyAllowance }),
      );
      expect(await ledgerOf(h, paid.account.account.id, ['adjustment'])).toEqual([expect.objectContaining({ operation: 'plan_upgrade', reference: `${subId}:build` })]);
      expect((await accountOf(h, expired.account.account.id)).plan).toBe('free');
      expect((await accountOf(h, waiting.account.account.id)).plan).toBe('free');
      expect([reads(paid.sessionId), reads(expired.sessionId), reads(waiting.sessionId)]).toEqual([1, 1, 1]);
      const closed = await h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ session_id: string }>>(`select session_id from subscription_checkouts where closed_at is not null and session_id in (?, ?, ?)`, [paid.sessionId, expired.sessionId, waiting.sessionId]);
      expect(closed.map((r) => r.session_id).sort()).toEqual([paid.sessionId, expired.sessionId].sort());

      // Closed ones are not asked again; the open one waits an hour.
      await sweep();
      expect([reads(paid.sessionId), reads(expired.sessionId), reads(waiting.sessionId)]).toEqual([1, 1, 1]);
      // The events, delivered late, change nothing more.
      stripe.autoDeliver = true;
      await stripe.completeCheckout(waiting.sessionId);
      await eventually(() => accountOf(h, waiting.account.account.id), (a) => a.plan === 'build');
      const rows = await h.orm.em.fork().getConnection().execute<Array<{ closed_at: Date | null }>>(`select closed_at from subscription_checkouts where session_id = ?`, [waiting.sessionId]);
      expect(rows[0]?.closed_at).not.toBeNull();
      expect(await ledgerOf(h, paid.account.account.id, ['adjustment'])).toHaveLength(1);
    });
  });

  describe('credit purchases', () => {
    it('sweeps credit alerts with accounts of large balances: a contract of 1,000,000,000 credits a month and 30,000,000 purchased credits', async () => {
      const large = await h.provision('build');
      await h.callPool.query(`update accounts set purchased_balance = 30000000 where id = $1`, [large.account.id]);
      const contract = await h.provision('contract');
      await h.callPool.query(`update accounts set monthly_allowance = 1000000000, allowance_remaining = 900000000 where id = $1`, [contract.account.id]);
      // An account at 5 % of its allowance still gets its alert in the same sweep.
      const low = await h.provision('build');
      await h.callPool.query(`update accounts set allowance_remaining = 1000, purchased_balance = 0 where id = $1`, [low.account.id]);
      await expect(sweepCreditAlerts(h.orm.em.fork(), new Date())).resolves.toBeGreaterThanOrEqual(1);
      const { rows: alerts } = await h.callPool.query<{ account_id: string }>(`select account_id from credit_alerts where account_id = any($1)`, [[large.account.id, contract.account.id, low.account.id]]);
      expect(alerts.map((a) => a.account_id)).toEqual([low.account.id, low.account.id]);
    });

    it('refuses a purchase that would take the purchased balance (with the purchases still pending) past 1,000,000,000 credits with 409, before any payment page', async () => {
      const account = await h.provision('build');
      await h.callPool.query(`update accounts set purchased_balance = 985000000 where id = $1`, [account.account.id]);
      const first = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 10_000_000 });
      expect(first.status).toBe(200);
      const sessionsBefore = stripe.requests.filter((r) => r === 'POST /v1/checkout/sessions').length;
      const refused = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 5_000_100 });
      expectError(refused, 409, 'PURCHASED_BALANCE_LIMIT');
      expect(refused.body.messageDetail).toMatch(/5,?000,?000/);
      expect(stripe.requests.filter((r) => r === 'POST /v1/checkout/sessions').length).toBe(sessionsBefore);
      // Exactly up to the limit is accepted.
      expect((await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 5_000_000 })).status).toBe(200);
    });

    it('holds the purchased-balance limit against concurrent purchases: with room for one, one of five is opened and four are 409', async () => {
      const account = await h.provision('build');
      await h.callPool.query(`update accounts set purchased_balance = 985000000 where id = $1`, [account.account.id]);
      const answers = await Promise.all(
        [0, 1, 2, 3, 4].map(() => h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 10_000_000 })),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      for (const refused of answers.filter((r) => r.status === 409)) expectError(refused, 409, 'PURCHASED_BALANCE_LIMIT');
      const { rows } = await h.callPool.query<{ n: number; units: string }>(
        `select count(*)::int as n, coalesce(sum(units), 0) as units from credit_purchases where account_id = $1 and state = 'pending'`,
        [account.account.id],
      );
      expect(rows[0]).toEqual({ n: 1, units: '10000000' });
    });

    it('keeps at most 10 purchases waiting for payment per account, also when 20 are asked at once: the others are 409 TOO_MANY_PENDING_PURCHASES before any payment page (an eighth probe opened 20 Checkout Sessions at once)', async () => {
      const account = await h.provision('build');
      const sessionsBefore = stripe.requests.filter((r) => r === 'POST /v1/checkout/sessions').length;
      const answers = await Promise.all(Array.from({ length: 20 }, () => h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 })));
      expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
      for (const refused of answers.filter((r) => r.status !== 200)) {
        expectError(refused, 409, 'TOO_MANY_PENDING_PURCHASES');
        expect(refused.body.limit).toBe(10);
      }
      expect(stripe.requests.filter((r) => r === 'POST /v1/checkout/sessions').length).toBe(sessionsBefore + 10);
      const pending = async () =>
        (await h.callPool.query<{ n: number }>(`select count(*)::int as n from credit_purchases where account_id = $1 and state = 'pending'`, [account.account.id])).rows[0]!.n;
      expect(await pending()).toBe(10);
      // one that is paid (or expires) makes room for another
      const paid = answers.find((r) => r.status === 200)!.body as { id: string; checkout_session_id: string };
      await stripe.completeCheckout(paid.checkout_session_id);
      await settledOrClosed(account.adminKey, paid.id);
      expect((await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 })).status).toBe(200);
      expect(await pending()).toBe(10);
    });

    it('does not count toward the 10 waiting purchases one whose Checkout Session Stripe refused, once 10 minutes have passed (it has no payment page to pay)', async () => {
      const account = await h.provision('build');
      const id = account.account.id;
      const first = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 });
      const customer = (await accountOf(h, id)).stripeCustomerId!;
      // Stripe refuses the session: its customer was deleted between the service's check and the call.
      const held = stripe.hold('POST', '/v1/checkout/sessions');
      const failing = h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 }).then((r) => r);
      await held.arrived;
      await stripe.deleteCustomer(customer);
      held.release();
      expectError(await failing, 502, 'PAYMENT_PROVIDER_ERROR');
      const db = h.orm.em.fork().getConnection();
      const [orphan] = await db.execute<Array<{ id: string }>>(`select id from credit_purchases where account_id = ? and checkout_session_id is null`, [id]);
      expect(orphan).toBeDefined();
      // Nine more such refusals, all more than 10 minutes ago, beside the one pending purchase with a payment page.
      for (let i = 0; i < 9; i += 1) {
        await db.execute(
          `insert into credit_purchases (id, account_id, workspace_id, plan, units, amount, currency, state, expires_at, created_at)
           select ?, account_id, workspace_id, plan, units, amount, currency, state, expires_at, created_at from credit_purchases where id = ?`,
          [`pur_${first.body.id.slice(4, 14)}${i}x${orphan!.id.slice(-10)}`, orphan!.id],
        );
      }
      await db.execute(`update credit_purchases set created_at = now() - interval '11 minutes' where account_id = ? and checkout_session_id is null`, [id]);
      const next = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 });
      expect(next.status).toBe(200);
      expect(next.body.payment_url).toEqual(expect.any(String));
    });

    it("refuses a purchase below Stripe's minimum charge with 400 before Stripe is asked (100 credits cost 0.40 USD on pro; Stripe's stand-in, like Stripe, refuses such a session), and buys the plan's minimum", async () => {
      const account = await h.provision('pro');
      const asked = stripe.requests.length;
      const refused = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 });
      expectError(refused, 400, 'VALIDATION_ERROR');
      expect(refused.body.minimum_units).toBe(200);
      expect(stripe.requests.slice(asked).filter((r) => r.startsWith('POST /v1/checkout/sessions'))).toEqual([]);
      expect(await h.orm.em.fork().count(CreditPurchaseSchema, { accountId: account.account.id })).toBe(0);
      const bought = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 200 });
      expect(bought.status).toBe(200);
      expect(bought.body).toEqual(expect.objectContaining({ units: 200, amount: 80, state: 'pending' }));
    });

    it('answers 409 PLAN_HAS_NO_UNIT_PRICE on free and contract plans and 400 for units that are not a positive multiple of 100; nothing is recorded', async () => {
      for (const plan of ['free', 'contract'] as const) {
        const account = await h.provision(plan);
        expectError(await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 100 }), 409, 'PLAN_HAS_NO_UNIT_PRICE');
      }
      const account = await h.provision('build');
      for (const units of [150, 0, -100, 99, 100.5, '100', null]) {
        expectError(await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units }), 400, 'VALIDATION_ERROR');
      }
      expectError(await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({}), 400, 'VALIDATION_ERROR');
      expect(await h.orm.em.fork().count(CreditPurchaseSchema, { accountId: account.account.id })).toBe(0);
      expectError(await h.http.get('/v1/billing/credits/pur_doesnotexist000000000').set('X-API-Key', account.adminKey), 404, 'NOT_FOUND');
    });

    it('records a pending purchase with its payment URL, credits nothing at request time, and runs purchase/<pur>', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(500);
      expect(purchase).toEqual(expect.objectContaining({ state: 'pending', units: 500, amount: 250, currency: 'usd', closed_at: null }));
      expect(purchase.id).toMatch(/^pur_[0-9A-Za-z]{22}$/);
      expect(purchase.payment_url).toBe(`${stripe.url}/checkout/${purchase.checkout_session_id}`);
      expect(stripe.sessions.get(purchase.checkout_session_id)).toEqual(expect.objectContaining({ mode: 'payment', metadata: expect.objectContaining({ purchase_id: purchase.id }) }));
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
      const description = await h.client.workflow.getHandle(`purchase/${purchase.id}`).describe();
      expect(description.status.name).toBe('RUNNING');
      expect((await purchaseState(adminKey, purchase.id)).body.state).toBe('pending');
      const other = await h.provision('build');
      expectError(await purchaseState(other.adminKey, purchase.id), 404, 'NOT_FOUND');
    });

    it('a purchase retried with the same Idempotency-Key is one purchase with one payment page (a nineteenth probe made two pending purchases), and the portal link it replays is the same', async () => {
      const account = await h.provision('build');
      const buy = () => h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).set('Idempotency-Key', 'buy-500').send({ units: 500 });
      const first = await buy();
      const retry = await buy();
      expect([first.status, retry.status, retry.headers['idempotent-replayed']]).toEqual([200, 200, 'true']);
      expect(retry.body).toEqual(first.body);
      // the account's key: the same call from an admin key of its other workspace is the same purchase (a twentieth probe bought twice)
      const other = await createWorkspace(h.orm.em.fork(), account.account.id, 'Other');
      const otherAdmin = await createKey(h.orm.em.fork(), other.id, { name: 'other admin', kind: 'admin', expiresAt: null });
      const fromOther = await h.http.post('/v1/billing/credits').set('X-API-Key', otherAdmin.secret).set('Idempotency-Key', 'buy-500').send({ units: 500 });
      expect([fromOther.status, fromOther.headers['idempotent-replayed'], fromOther.body.id]).toEqual([200, 'true', first.body.id]);
      expect(await h.orm.em.fork().count(CreditPurchaseSchema, { accountId: account.account.id })).toBe(1);
      expect([...stripe.sessions.values()].filter((s) => (s.metadata as { purchase_id?: string } | undefined)?.purchase_id === first.body.id)).toHaveLength(1);
      const portal = () => h.http.post('/v1/billing/portal').set('X-API-Key', account.adminKey).set('Idempotency-Key', 'portal-once');
      const [a, b] = [await portal(), await portal()];
      expect([a.status, b.status, b.headers['idempotent-replayed'], b.body.url]).toEqual([200, 200, 'true', a.body.url]);
    });

    it('credits a purchase exactly once when its completion event arrives twice, concurrently and again after settling', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(300);
      const [completed] = await stripe.completeCheckout(purchase.checkout_session_id);
      const answers = await Promise.all([0, 1, 2, 3].map(() => postEvent(h, completed!, stripe.webhookSecret)));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
      expect((await postEvent(h, completed!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(300);
      expect(await ledgerOf(h, account.id, ['purchase'])).toEqual([{ kind: 'purchase', operation: 'credit_purchase', allowanceDelta: 0, balanceDelta: 300, reference: purchase.id }]);
    });

    it('credits once when an asynchronous payment’s events arrive out of order (success before completion)', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(200);
      const [completed] = await stripe.completeCheckout(purchase.checkout_session_id, 'pending');
      const [succeeded] = await stripe.settleAsyncPayment(purchase.checkout_session_id, true);
      expect((await postEvent(h, succeeded!, stripe.webhookSecret)).status).toBe(200);
      expect((await postEvent(h, completed!, stripe.webhookSecret)).status).toBe(200);
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(200);
      expect(await ledgerOf(h, account.id, ['purchase'])).toHaveLength(1);
    });

    it('settles a purchase whose completion arrives when its workflow is not running (signal-with-start)', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(100);
      await h.client.workflow.getHandle(`purchase/${purchase.id}`).terminate('test: the start was lost');
      await stripe.completeCheckout(purchase.checkout_session_id);
      await stripe.flush();
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(100);
    });

    it('a failed asynchronous payment and an expired session credit nothing', async () => {
      const failed = await pendingPurchase(400, false);
      await stripe.completeCheckout(failed.purchase.checkout_session_id, 'pending');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await purchaseState(failed.adminKey, failed.purchase.id)).body.state).toBe('pending');
      await stripe.settleAsyncPayment(failed.purchase.checkout_session_id, false);
      expect((await settledOrClosed(failed.adminKey, failed.purchase.id)).body).toEqual(expect.objectContaining({ state: 'failed', closed_at: expect.any(String) }));

      const expired = await pendingPurchase(400, false);
      await stripe.expireSession(expired.purchase.checkout_session_id);
      expect((await settledOrClosed(expired.adminKey, expired.purchase.id)).body.state).toBe('expired');

      for (const { account } of [failed, expired]) {
        expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
        expect(await ledgerOf(h, account.id, ['purchase'])).toEqual([]);
      }
    });

    it('answers 400 INVALID_SIGNATURE to a bad, a missing or a stale signature and to a body altered after signing, and changes nothing', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(500);
      const [completed] = await stripe.completeCheckout(purchase.checkout_session_id);
      const payload = JSON.stringify(completed);
      expectError(await postEvent(h, completed!, 'whsec_not_the_right_secret'), 400, 'INVALID_SIGNATURE');
      expectError(await postEvent(h, completed!, stripe.webhookSecret, (p) => p.replace('"units":"500"', '"units":"5000"')), 400, 'INVALID_SIGNATURE');
      expectError(await postEvent(h, completed!, stripe.webhookSecret, (p) => `${p} `), 400, 'INVALID_SIGNATURE');
      expectError(await h.http.post(WEBHOOK_PATH).set('content-type', 'application/json').send(payload), 400, 'INVALID_SIGNATURE');
      const stale = Stripe.webhooks.generateTestHeaderString({ payload, secret: stripe.webhookSecret, timestamp: Math.floor(Date.now() / 1000) - 3600 });
      expectError(await h.http.post(WEBHOOK_PATH).set('content-type', 'application/json').set('stripe-signature', stale).send(payload), 400, 'INVALID_SIGNATURE');

      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await h.orm.em.fork().count(StripeEventSchema, { id: completed!.id })).toBe(0);
      expect((await purchaseState(adminKey, purchase.id)).body.state).toBe('pending');
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
      // The genuine delivery still settles it: nothing was recorded by the refused ones.
      expect((await postEvent(h, completed!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
    });

    it('the stand-in’s checkout page pays as a customer would: its signed events settle the purchase', async () => {
      const { purchase, account, adminKey } = await pendingPurchase(100, false);
      const page = await fetch(purchase.payment_url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('Pay 0.50 USD');
      const paid = await fetch(`${purchase.payment_url}/pay`, { method: 'POST', redirect: 'manual' });
      expect(paid.status).toBe(303);
      expect(paid.headers.get('location')).toContain('checkout=success');
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
      expect((await accountOf(h, account.id)).purchasedBalance).toBe(100);
    });

    it('draws the monthly allowance before the purchased balance after a purchase', async () => {
      const { purchase, account, adminKey, apiKey } = await pendingPurchase(100, false);
      await stripe.completeCheckout(purchase.checkout_session_id);
      expect((await settledOrClosed(adminKey, purchase.id)).body.state).toBe('settled');
      await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 3 where id = ?`, [account.id]);
      const data = Array.from({ length: 24 }, (_, i) => ({ t: new Date(Date.UTC(2024, 0, 1 + i)).toISOString().slice(0, 10), y: 10 + (i % 7) }));
      const forecast = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).send({ target: 'y', timestamp: 't', data, horizon: 5 });
      expect(forecast.status).toBe(200);
      expect(forecast.headers['x-service-predictions-remaining']).toBe('98');
      const after = await h.http.get('/v1/billing/subscription').set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ allowance_remaining: 0, purchased_balance: 98, credits_remaining: 98 }));
      const charges = await ledgerOf(h, account.id, ['charge']);
      expect(charges.map((c) => [c.allowanceDelta, c.balanceDelta])).toEqual([[-3, -2]]);
    });
  });
});
