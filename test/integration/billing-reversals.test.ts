import type Stripe from 'stripe';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';
import { accountOf, eventually, ledgerOf, postEvent, startBillingHarness } from '../support/billing';
import type { Harness } from '../support/harness';

/**
 * Refunds and disputes of credit purchases, driven through the Stripe stand-in: the credits a payment
 * bought follow the money Stripe reports kept (a refund or a withheld dispute takes them back, a won
 * dispute gives them back), once per change, whatever the order and repetition of the events.
 */
describe('refunded and disputed credit purchases', () => {
  let h: Harness;
  let stripe: StripeStandIn;
  beforeAll(async () => {
    ({ h, stripe } = await startBillingHarness());
  });
  afterAll(() => h.stop());
  afterEach(() => {
    stripe.autoDeliver = true;
  });

  const purchaseOf = (adminKey: string, id: string) => h.http.get(`/v1/billing/credits/${id}`).set('X-API-Key', adminKey);

  /** A build-plan account whose purchase of `units` credits was paid and settled. */
  async function settledPurchase(units: number) {
    const account = await h.provision('build');
    const res = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units });
    expect(res.status).toBe(200);
    await stripe.completeCheckout(res.body.checkout_session_id);
    const settled = await eventually(
      () => purchaseOf(account.adminKey, res.body.id),
      (r) => r.body.state === 'settled',
    );
    expect(settled.body.state).toBe('settled');
    return { ...account, purchaseId: res.body.id as string, sessionId: res.body.checkout_session_id as string };
  }

  it('takes a fully refunded purchase’s credits back once, with one reversal in the ledger, also when Stripe delivers the event again', async () => {
    const { account, adminKey, purchaseId, sessionId } = await settledPurchase(500);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(500);
    const [refunded] = await stripe.refundPayment(sessionId);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
    expect((await postEvent(h, refunded!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: true });
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
    expect(await ledgerOf(h, account.id, ['purchase', 'reversal'])).toEqual([
      { kind: 'purchase', operation: 'credit_purchase', allowanceDelta: 0, balanceDelta: 500, reference: purchaseId },
      { kind: 'reversal', operation: 'payment_reversed', allowanceDelta: 0, balanceDelta: -500, reference: purchaseId },
    ]);
    expect((await purchaseOf(adminKey, purchaseId)).body).toEqual(expect.objectContaining({ state: 'settled', units_reversed: 500 }));
  });

  it('takes back a partial refund’s share of the credits (rounded up), then the rest when the remainder is refunded', async () => {
    // 700 credits on build cost 7 blocks; a refund of a third of the price takes back 234 (233.33 rounded up).
    const { account, purchaseId, sessionId } = await settledPurchase(700);
    const charge = stripe.charges.get(String(stripe.sessions.get(sessionId)?._charge))!;
    const price = charge.amount as number;
    await stripe.refundPayment(sessionId, Math.floor(price / 3));
    const partial = Math.ceil((700 * Math.floor(price / 3)) / price);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(700 - partial);
    await stripe.refundPayment(sessionId);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(0);
    const reversals = await ledgerOf(h, account.id, ['reversal']);
    expect(reversals.map((r) => r.balanceDelta)).toEqual([-partial, -(700 - partial)]);
    expect(reversals.every((r) => r.reference === purchaseId)).toBe(true);
  });

  it('leaves the purchased balance below zero when the refunded credits were spent, and refuses paid calls the allowance left cannot cover beyond that debt', async () => {
    const { account, adminKey, apiKey, sessionId } = await settledPurchase(100);
    const conn = h.orm.em.fork().getConnection();
    // The allowance is spent and the purchase's credits drawn down to 40 before the refund.
    await conn.execute(`update accounts set allowance_remaining = 0, purchased_balance = 40 where id = ?`, [account.id]);
    await stripe.refundPayment(sessionId);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(-60);
    const subscription = await h.http.get('/v1/billing/subscription').set('X-API-Key', adminKey);
    expect(subscription.body).toEqual(expect.objectContaining({ purchased_balance: -60, credits_remaining: -60 }));
    // 65 credits of allowance cover a 5-credit forecast only beyond the 60 owed: 5 is refused, the debt stays.
    await conn.execute(`update accounts set allowance_remaining = 64 where id = ?`, [account.id]);
    const data = Array.from({ length: 24 }, (_, i) => ({ t: new Date(Date.UTC(2024, 0, 1 + i)).toISOString().slice(0, 10), y: 10 + (i % 7) }));
    const refused = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).send({ target: 'y', timestamp: 't', data, horizon: 5 });
    expect(refused.status).toBe(402);
    expect(refused.body.message).toBe('CREDITS_EXHAUSTED');
    await conn.execute(`update accounts set allowance_remaining = 65 where id = ?`, [account.id]);
    const served = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).send({ target: 'y', timestamp: 't', data, horizon: 5 });
    expect(served.status).toBe(200);
    expect(served.headers['x-service-predictions-remaining']).toBe('0');
    expect(await accountOf(h, account.id)).toEqual(expect.objectContaining({ allowanceRemaining: 60, purchasedBalance: -60 }));
  });

  it('withholds a disputed purchase’s credits while the dispute is open and gives them back when the dispute is won; a lost dispute keeps them taken', async () => {
    const won = await settledPurchase(300);
    const [opened] = await stripe.disputePayment(won.sessionId);
    expect((await accountOf(h, won.account.id)).purchasedBalance).toBe(0);
    await stripe.closeDispute((opened!.data.object as Stripe.Dispute).id, 'won');
    expect((await accountOf(h, won.account.id)).purchasedBalance).toBe(300);
    expect((await ledgerOf(h, won.account.id, ['reversal'])).map((r) => [r.operation, r.balanceDelta])).toEqual([
      ['payment_reversed', -300],
      ['payment_reinstated', 300],
    ]);

    const lost = await settledPurchase(200);
    const [lostOpened] = await stripe.disputePayment(lost.sessionId);
    await stripe.closeDispute((lostOpened!.data.object as Stripe.Dispute).id, 'lost');
    expect((await accountOf(h, lost.account.id)).purchasedBalance).toBe(0);
    expect(await ledgerOf(h, lost.account.id, ['reversal'])).toHaveLength(1);
  });

  it('ends in Stripe’s latest state when a dispute’s events arrive out of order: the closing (won) before the opening takes nothing', async () => {
    const { account, sessionId } = await settledPurchase(400);
    stripe.autoDeliver = false;
    const [opened] = await stripe.disputePayment(sessionId);
    const [closed] = await stripe.closeDispute((opened!.data.object as Stripe.Dispute).id, 'won');
    expect((await postEvent(h, closed!, stripe.webhookSecret)).status).toBe(200);
    expect((await postEvent(h, opened!, stripe.webhookSecret)).status).toBe(200);
    expect((await accountOf(h, account.id)).purchasedBalance).toBe(400);
    expect(await ledgerOf(h, account.id, ['reversal'])).toEqual([]);
  });

  it('applies a refund that arrives before the purchase settles when it settles: credited and taken back, net zero', async () => {
    const account = await h.provision('build');
    const res = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 200 });
    stripe.autoDeliver = false;
    const [completed] = await stripe.completeCheckout(res.body.checkout_session_id);
    const [refunded] = await stripe.refundPayment(res.body.checkout_session_id);
    // The refund's event names the PaymentIntent, which the service learns from Stripe's session list.
    expect((await postEvent(h, refunded!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
    expect((await purchaseOf(account.adminKey, res.body.id)).body.state).toBe('pending');
    expect((await postEvent(h, completed!, stripe.webhookSecret)).status).toBe(200);
    const settled = await eventually(
      () => purchaseOf(account.adminKey, res.body.id),
      (r) => r.body.state === 'settled',
    );
    expect(settled.body).toEqual(expect.objectContaining({ state: 'settled', units_reversed: 200 }));
    expect((await accountOf(h, account.account.id)).purchasedBalance).toBe(0);
    // One transaction writes both rows at one instant, so they are compared by kind, not by order.
    const rows = await ledgerOf(h, account.account.id, ['purchase', 'reversal']);
    expect(rows.map((r) => [r.kind, r.balanceDelta]).sort()).toEqual([
      ['purchase', 200],
      ['reversal', -200],
    ]);
  });

  it('acknowledges a refund of a payment that bought no credits (a subscription’s) and moves no balance', async () => {
    const account = await h.provision('build');
    const before = await accountOf(h, account.account.id);
    const refund = {
      id: 'evt_refund_not_ours',
      object: 'event',
      api_version: '2024-06-20',
      created: Math.floor(Date.now() / 1000),
      type: 'charge.refunded',
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: { id: 'ch_not_ours', object: 'charge', amount: 2900, amount_refunded: 2900, refunded: true, payment_intent: 'pi_of_an_invoice', currency: 'usd' } },
    };
    expect((await postEvent(h, JSON.stringify(refund), stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
    expect((await accountOf(h, account.account.id)).purchasedBalance).toBe(before.purchasedBalance);
    expect(await ledgerOf(h, account.account.id, ['reversal'])).toEqual([]);
  });
});
