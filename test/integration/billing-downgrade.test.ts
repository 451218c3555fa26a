import Stripe from 'stripe';
import { PLAN_PRICES, PLANS, type PaidPlan } from '../../config/plans';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';
import { accountOf, eventually, ledgerOf, postEvent, startBillingHarness } from '../support/billing';
import type { Harness } from '../support/harness';

type Json = Record<string, unknown>;

/**
 * A downgrade waits for the end of the subscription's Stripe period, in a Stripe subscription schedule
 * (services/billing.ts scheduleDowngrade): the plan, its limits and its price stay until then and
 * nothing is credited; Stripe renews the subscription on the lower price and its events move the
 * plan. The stand-in's endPeriod is the period's end passing (as a test clock would).
 */
describe('billing: a downgrade at the end of the period', () => {
  let h: Harness;
  let stripe: StripeStandIn;
  beforeAll(async () => {
    ({ h, stripe } = await startBillingHarness());
    const sdk = new Stripe('sk_test_reader', { host: new URL(stripe.url).hostname, port: new URL(stripe.url).port, protocol: 'http' });
    for (const price of (await sdk.prices.list({ lookup_keys: ['plan_build', 'plan_pro', 'plan_growth'] })).data) lookupKeys.set(price.id, price.lookup_key!);
  });
  afterAll(() => h.stop());
  afterEach(() => {
    stripe.autoDeliver = true;
  });

  /** A free account subscribed to `plan` through Checkout, its events delivered. */
  async function subscribedTo(plan: PaidPlan) {
    const account = await h.provision('free');
    const id = account.account.id;
    const checkout = await h.http.post('/v1/billing/checkout').set('X-API-Key', account.adminKey).send({ plan });
    await stripe.completeCheckout(checkout.body.id);
    await eventually(() => accountOf(h, id), (a) => a.plan === plan);
    const subId = stripe.sessions.get(checkout.body.id)?.subscription as string;
    const sub = () => h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey);
    const patch = (to: PaidPlan) => h.http.patch('/v1/billing/subscription').set('X-API-Key', account.adminKey).send({ plan: to });
    return { id, subId, adminKey: account.adminKey, sub, patch, periodEnd: (await sub()).body.current_period_end as string };
  }

  const priceOf = (subId: string) => ((stripe.subscriptions.get(subId)!.items as { data: Array<{ price: Json }> }).data[0]!.price as { lookup_key: string }).lookup_key;
  const prorationsOf = (subId: string) => stripe.prorations.filter((p) => p.subscription === subId);
  const invoicesOf = (subId: string) => stripe.invoices.filter((i) => i.subscription === subId);
  const schedulesOf = (subId: string) => [...stripe.schedules.values()].filter((s) => s.subscription === subId || s.released_subscription === subId);
  /** The lookup_key of a price of the stand-in, by id. */
  const lookupKeys = new Map<string, string>();
  const lookupKeyOfPrice = (priceId: string) => lookupKeys.get(priceId);
  /** The events the stand-in sends after answering have been handled (each is recorded once handled). */
  const settled = async () => {
    const ids = stripe.events.map((e) => e.id);
    await eventually(
      async () => (await h.orm.em.fork().getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from stripe_events where id = any(string_to_array(?, ','))`, [ids.join(',')]))[0]!.n,
      (n) => n === ids.length,
    );
  };
  /** The price (in minor units) of 500 credits bought now: the plan's unit price, one of its limits. */
  const creditPrice = async (adminKey: string) => {
    const res = await h.http.post('/v1/billing/credits').set('X-API-Key', adminKey).send({ units: 500 });
    expect(res.status).toBe(200);
    return res.body.amount as number;
  };

  it("keeps the plan, its allowance and its credit price until the period's end and credits nothing: a pro account that spent its allowance downgrades to build", async () => {
    const { id, subId, adminKey, sub, patch, periodEnd } = await subscribedTo('pro');
    // the month's whole allowance spent on day 2
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 0 where id = ?`, [id]);
    const proratedBefore = prorationsOf(subId).length;
    const invoicedBefore = invoicesOf(subId).length;

    const asked = await patch('build');
    expect(asked.status).toBe(200);
    expect(asked.body).toEqual(
      expect.objectContaining({ plan: 'pro', pending_plan: 'build', plan_changes_at: periodEnd, current_period_end: periodEnd, monthly_allowance: 200_000, allowance_remaining: 0 }),
    );
    await settled();
    // GET shows the change waiting; the plan and its limits are pro's until then
    expect((await sub()).body).toEqual(
      expect.objectContaining({ plan: 'pro', status: 'active', pending_plan: 'build', plan_changes_at: periodEnd, monthly_allowance: PLANS.pro.monthlyAllowance, allowance_remaining: 0 }),
    );
    expect(await creditPrice(adminKey)).toBe(5 * PLAN_PRICES.pro.perCreditBlock!);
    // Stripe: still billing pro, nothing prorated, credited or invoiced; a schedule moves it to build when the period ends
    expect(priceOf(subId)).toBe('plan_pro');
    expect(prorationsOf(subId).slice(proratedBefore)).toEqual([]);
    expect(invoicesOf(subId).slice(invoicedBefore)).toEqual([]);
    const [schedule] = schedulesOf(subId);
    expect(schedule).toEqual(expect.objectContaining({ status: 'active', end_behavior: 'release' }));
    const phases = schedule!.phases as Array<{ start_date: number; items: Array<{ price: string }>; proration_behavior: string }>;
    expect(phases.map((p) => p.proration_behavior)).toEqual(['none', 'none']);
    expect(phases[1]!.start_date * 1000).toBe(Date.parse(periodEnd));
    expect(lookupKeyOfPrice(phases[0]!.items[0]!.price)).toBe('plan_pro');
    // no plan change recorded yet: only the subscription's own upgrade from free
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.operation)).toEqual(['plan_upgrade']);
    expect(await accountOf(h, id)).toEqual(expect.objectContaining({ plan: 'pro', monthlyAllowance: 200_000 }));
  });

  it("at the period's end Stripe renews on build's price and the plan moves to build (this month's allowance kept, build's from next month); the schedule then lets the subscription go on build", async () => {
    const { id, subId, adminKey, sub, patch } = await subscribedTo('pro');
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 150000 where id = ?`, [id]);
    expect((await patch('build')).status).toBe(200);
    await settled();
    const proratedBefore = prorationsOf(subId).length;

    await stripe.endPeriod(subId);
    const moved = await eventually(sub, (r) => r.body.plan === 'build');
    expect(moved.body).toEqual(expect.objectContaining({ plan: 'build', pending_plan: null, plan_changes_at: null, monthly_allowance: 20_000, allowance_remaining: 150_000 }));
    expect(invoicesOf(subId).at(-1)).toEqual(expect.objectContaining({ amount: PLAN_PRICES.build.monthly, lookupKey: 'plan_build', billingReason: 'subscription_cycle' }));
    expect(prorationsOf(subId).slice(proratedBefore)).toEqual([]);
    expect(await creditPrice(adminKey)).toBe(5 * PLAN_PRICES.build.perCreditBlock!);
    expect(await ledgerOf(h, id, ['adjustment'])).toEqual([
      expect.objectContaining({ operation: 'plan_upgrade', reference: `${subId}:pro` }),
      { kind: 'adjustment', operation: 'plan_downgrade', allowanceDelta: 0, balanceDelta: 0, reference: `${subId}:build` },
    ]);

    // the next period: the schedule's last phase ends, it releases the subscription, which renews on build as any other
    await stripe.endPeriod(subId);
    await settled();
    expect(schedulesOf(subId).map((s) => s.status)).toEqual(['released']);
    expect(stripe.subscriptions.get(subId)?.schedule).toBeNull();
    expect(invoicesOf(subId).slice(-2).map((i) => i.amount)).toEqual([PLAN_PRICES.build.monthly, PLAN_PRICES.build.monthly]);
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'build', status: 'active', pending_plan: null }));
    // the next allowance month opens at build's allowance
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_period = '2020-01' where id = ?`, [id]);
    expect((await sub()).body).toEqual(expect.objectContaining({ monthly_allowance: 20_000, allowance_remaining: 20_000 }));
  });

  it('an upgrade while a downgrade waits drops the downgrade (its schedule released) and upgrades at once, billed as any upgrade; the period then renews on the upgraded price', async () => {
    const { id, subId, sub, patch } = await subscribedTo('pro');
    expect((await patch('build')).body.pending_plan).toBe('build');
    await settled();
    const proratedBefore = prorationsOf(subId).length;

    const up = await patch('growth');
    expect(up.status).toBe(200);
    // growth waits for Stripe's confirmation, unless its event was handled before the answer was made
    expect([up.body.plan, up.body.pending_plan, up.body.plan_changes_at]).toEqual(up.body.plan === 'growth' ? ['growth', null, null] : ['pro', 'growth', null]);
    const growth = await eventually(sub, (r) => r.body.plan === 'growth');
    expect(growth.body).toEqual(expect.objectContaining({ pending_plan: null, plan_changes_at: null, monthly_allowance: 1_000_000, allowance_remaining: 1_000_000 }));
    expect(schedulesOf(subId).map((s) => s.status)).toEqual(['released']);
    // billed as an upgrade without a waiting downgrade: one invoice now, a new period
    expect(prorationsOf(subId).slice(proratedBefore)).toEqual([expect.objectContaining({ invoicedNow: true, periodRestarted: true, behavior: 'always_invoice' })]);

    await stripe.endPeriod(subId);
    await settled();
    expect(invoicesOf(subId).at(-1)).toEqual(expect.objectContaining({ amount: PLAN_PRICES.growth.monthly, lookupKey: 'plan_growth' }));
    expect((await sub()).body.plan).toBe('growth');
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:pro`, `${subId}:growth`]);
  });

  it("a second downgrade replaces the first: one schedule, its next phase on the later plan, and the period's end moves growth straight to build", async () => {
    const { id, subId, sub, patch, periodEnd } = await subscribedTo('growth');
    expect((await patch('pro')).body).toEqual(expect.objectContaining({ plan: 'growth', pending_plan: 'pro', plan_changes_at: periodEnd }));
    const second = await patch('build');
    expect(second.body).toEqual(expect.objectContaining({ plan: 'growth', pending_plan: 'build', plan_changes_at: periodEnd }));
    await settled();
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'growth', pending_plan: 'build', plan_changes_at: periodEnd }));
    const schedules = schedulesOf(subId);
    expect(schedules.map((s) => s.status)).toEqual(['active']);
    const phases = schedules[0]!.phases as Array<{ items: Array<{ price: string }> }>;
    expect(phases).toHaveLength(2);
    expect(lookupKeyOfPrice(phases[0]!.items[0]!.price)).toBe('plan_growth');
    expect(prorationsOf(subId)).toEqual([]);

    await stripe.endPeriod(subId);
    await eventually(sub, (r) => r.body.plan === 'build');
    expect(invoicesOf(subId).at(-1)).toEqual(expect.objectContaining({ amount: PLAN_PRICES.build.monthly, lookupKey: 'plan_build' }));
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:growth`, `${subId}:build`]);
  });

  it('down and back to the current plan within a period bills nothing: the waiting downgrade is dropped and the subscription renews on its own price', async () => {
    const { id, subId, sub, patch } = await subscribedTo('pro');
    expect((await patch('build')).body.pending_plan).toBe('build');
    const back = await patch('pro');
    expect(back.status).toBe(200);
    expect(back.body).toEqual(expect.objectContaining({ plan: 'pro', pending_plan: null, plan_changes_at: null }));
    await settled();
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'pro', pending_plan: null, plan_changes_at: null }));
    expect(schedulesOf(subId).map((s) => s.status)).toEqual(['released']);
    expect(prorationsOf(subId)).toEqual([]);
    expect(invoicesOf(subId)).toEqual([]);

    await stripe.endPeriod(subId);
    await settled();
    expect(invoicesOf(subId)).toEqual([expect.objectContaining({ amount: PLAN_PRICES.pro.monthly, lookupKey: 'plan_pro' })]);
    expect((await sub()).body.plan).toBe('pro');
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:pro`]);
  });

  it("a cancellation while a downgrade waits releases the schedule first (Stripe refuses to change a scheduled subscription's cancellation) and ends the subscription at the period's end: the account falls to free, not to build", async () => {
    const { id, subId, adminKey, sub, patch } = await subscribedTo('pro');
    expect((await patch('build')).body.pending_plan).toBe('build');
    const cancel = await h.http.delete('/v1/billing/subscription').set('X-API-Key', adminKey);
    expect(cancel.status).toBe(200);
    expect(cancel.body).toEqual(expect.objectContaining({ plan: 'pro', cancel_at_period_end: true, pending_plan: null, plan_changes_at: null }));
    expect(schedulesOf(subId).map((s) => s.status)).toEqual(['released']);
    await settled();
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'pro', cancel_at_period_end: true, pending_plan: null }));

    await stripe.endPeriod(subId);
    const ended = await eventually(sub, (r) => r.body.plan === 'free');
    expect(ended.body).toEqual(expect.objectContaining({ status: 'canceled', pending_plan: null }));
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:pro`, `${subId}:free`]);
  });

  it("handles the schedule's and the period's end events in any order and twice: the plan moves to build once", async () => {
    const { id, subId, sub, patch } = await subscribedTo('pro');
    stripe.autoDeliver = false;
    expect((await patch('build')).body.pending_plan).toBe('build');
    await stripe.endPeriod(subId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const held = stripe.outbox.splice(0);
    expect(held.map((e) => e.type)).toEqual(['subscription_schedule.created', 'customer.subscription.updated', 'subscription_schedule.updated', 'customer.subscription.updated', 'subscription_schedule.updated']);
    // newest first, then every one again
    for (const e of [...held].reverse()) expect((await postEvent(h, e, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
    for (const e of held) expect((await postEvent(h, e, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: true });
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'build', pending_plan: null, plan_changes_at: null, monthly_allowance: 20_000 }));
    expect((await ledgerOf(h, id, ['adjustment'])).map((r) => r.reference)).toEqual([`${subId}:pro`, `${subId}:build`]);
  });
  it('runs one change of a subscription at a time: a PATCH or DELETE sent while another is in progress answers 409 BILLING_CHANGE_IN_PROGRESS and asks Stripe nothing, so a downgrade can never write back a price read before an upgrade (a twenty-fifth probe: 700 USD invoiced and the account put back on pro)', async () => {
    const { id, subId, patch, adminKey, sub } = await subscribedTo('pro');
    const proratedBefore = prorationsOf(subId).length;
    // the downgrade waits on Stripe after reading the subscription
    const held = stripe.hold('POST', '/v1/subscription_schedules');
    const downgrade = patch('build').then((r) => r);
    await held.arrived;
    const requestsBefore = stripe.requests.length;
    const racing = [await patch('growth'), await h.http.delete('/v1/billing/subscription').set('X-API-Key', adminKey)];
    for (const res of racing) {
      expect(res.status).toBe(409);
      expect(res.body.message).toBe('BILLING_CHANGE_IN_PROGRESS');
    }
    expect(stripe.requests.length).toBe(requestsBefore);
    held.release();
    expect((await downgrade).status).toBe(200);
    await settled();
    expect(priceOf(subId)).toBe('plan_pro');
    expect(prorationsOf(subId)).toHaveLength(proratedBefore);
    expect((await sub()).body).toEqual(expect.objectContaining({ plan: 'pro', pending_plan: 'build', cancel_at_period_end: false }));
    // the change over, the next one proceeds: the upgrade drops the downgrade and is billed once
    const upgraded = await patch('growth');
    expect(upgraded.status).toBe(200);
    expect(upgraded.body.pending_plan === null || upgraded.body.pending_plan !== upgraded.body.plan).toBe(true);
    await settled();
    expect((await accountOf(h, id)).plan).toBe('growth');
    expect(prorationsOf(subId).map((p) => p.periodRestarted)).toEqual([...prorationsOf(subId).slice(0, proratedBefore).map((p) => p.periodRestarted), true]);
  });

  it("stores a cancellation when Stripe answers it, so that choosing the plan again before the cancellation's event comes undoes it at Stripe (a twenty-fifth probe: the PATCH answered cancel_at_period_end false without asking Stripe, and the subscription ended)", async () => {
    const { id, subId, patch, adminKey } = await subscribedTo('pro');
    stripe.autoDeliver = false;
    const cancelled = await h.http.delete('/v1/billing/subscription').set('X-API-Key', adminKey);
    expect(cancelled.body.cancel_at_period_end).toBe(true);
    expect((await accountOf(h, id)).subscriptionCancelAtPeriodEnd).toBe(true);
    const kept = await patch('pro');
    expect(kept.status).toBe(200);
    expect(kept.body.cancel_at_period_end).toBe(false);
    expect(stripe.subscriptions.get(subId)!.cancel_at_period_end).toBe(false);
    // the events, late and in any order, end on Stripe's state: the subscription goes on
    stripe.autoDeliver = true;
    await stripe.flush();
    await settled();
    expect((await accountOf(h, id)).subscriptionCancelAtPeriodEnd).toBe(false);
  });
});
