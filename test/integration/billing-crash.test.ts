import type { ChildProcess } from 'node:child_process';
import { CreditPurchaseSchema, type CreditPurchase } from '../../db/entities';
import { freePort } from '../../scripts/lib/ports';
import type { StripeStandIn } from '../../scripts/lib/stripe-standin';
import { accountOf, eventually, ledgerOf, postEvent, startBillingHarness } from '../support/billing';
import type { Harness } from '../support/harness';
import { killProcessGroup, spawnServiceProcess, startInProcessWorker } from '../support/processes';

/**
 * A purchase whose API process is killed (SIGKILL) while Stripe creates its Checkout Session: the
 * purchase row is already committed and its `purchase/<pur>` workflow already runs, so the payment,
 * if it comes, is credited once, and otherwise the purchase expires at its deadline. And a worker
 * that stops while the settlement event arrives settles it once when a worker comes back.
 */
describe('credit purchases across a killed API process and a worker restart', () => {
  let h: Harness;
  let stripe: StripeStandIn;
  let child: ChildProcess | null = null;
  let worker: { stop(): Promise<void> } | null = null;

  beforeAll(async () => {
    ({ h, stripe } = await startBillingHarness({ withoutWorker: true }));
  });
  afterAll(async () => {
    killProcessGroup(child);
    await worker?.stop();
    await h.stop();
  });

  async function startApi(env: Record<string, string>): Promise<string> {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    child = spawnServiceProcess('api', h.taskQueue, {
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ENGINE_THREADS: '1',
      STRIPE_SECRET_KEY: 'sk_test_standin',
      STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
      STRIPE_API_URL: stripe.url,
      ...env,
    });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) return base;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error('the API process did not come up');
  }

  /** Buys through the child API and kills it while Stripe holds the session creation; the session is then made anyway. */
  async function buyAndKillMidSession(base: string, adminKey: string, accountId: string): Promise<{ purchase: CreditPurchase; sessionId: string }> {
    const held = stripe.hold('POST', '/v1/checkout/sessions');
    const answer = fetch(`${base}/v1/billing/credits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': adminKey },
      body: JSON.stringify({ units: 700 }),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    await held.arrived;
    killProcessGroup(child);
    child = null;
    expect(await answer).toBe('connection lost');
    held.release();
    const sessionId = await eventually(
      async () => [...stripe.sessions.values()].find((s) => (s.metadata as { account_id?: string }).account_id === accountId)?.id as string | undefined,
      (id) => id !== undefined,
    );
    const purchases = await h.orm.em.fork().find(CreditPurchaseSchema, { accountId });
    expect(purchases).toHaveLength(1);
    const purchase = purchases[0]!;
    // Committed before the session existed, so without it; its workflow is already running.
    expect(purchase).toEqual(expect.objectContaining({ state: 'pending', units: 700, checkoutSessionId: null }));
    expect((await h.client.workflow.getHandle(`purchase/${purchase.id}`).describe()).status.name).toBe('RUNNING');
    return { purchase, sessionId: sessionId! };
  }

  it('an API killed while Stripe creates the session leaves a purchase whose payment is still credited once', async () => {
    worker = await startInProcessWorker(h);
    const account = await h.provision('build');
    const base = await startApi({});
    const { purchase, sessionId } = await buyAndKillMidSession(base, account.adminKey, account.account.id);

    const [completed] = await stripe.completeCheckout(sessionId);
    await postEvent(h, completed!, stripe.webhookSecret);
    const settled = await eventually(
      () => h.orm.em.fork().findOneOrFail(CreditPurchaseSchema, { id: purchase.id }, { refresh: true }),
      (p) => p.state !== 'pending',
    );
    expect(settled.state).toBe('settled');
    expect((await accountOf(h, account.account.id)).purchasedBalance).toBe(700);
    expect(await ledgerOf(h, account.account.id, ['purchase'])).toEqual([expect.objectContaining({ balanceDelta: 700, reference: purchase.id })]);
  });

  it('an API killed while Stripe creates the session leaves a purchase that, unpaid, expires at its deadline (session expired at Stripe) and credits nothing', async () => {
    const account = await h.provision('build');
    const base = await startApi({ PURCHASE_SESSION_TTL_SECONDS: '2', PURCHASE_RECONCILE_GRACE_SECONDS: '0' });
    const { purchase, sessionId } = await buyAndKillMidSession(base, account.adminKey, account.account.id);

    const closed = await eventually(
      () => h.orm.em.fork().findOneOrFail(CreditPurchaseSchema, { id: purchase.id }, { refresh: true }),
      (p) => p.state !== 'pending',
    );
    expect(closed).toEqual(expect.objectContaining({ state: 'expired', closedBy: 'reconcile' }));
    expect(stripe.sessions.get(sessionId)?.status).toBe('expired');
    expect((await accountOf(h, account.account.id)).purchasedBalance).toBe(0);
    expect(await ledgerOf(h, account.account.id, ['purchase'])).toEqual([]);
  });

  it('a settlement that arrives while no worker runs is credited once when a worker comes back', async () => {
    const account = await h.provision('build');
    const bought = await h.http.post('/v1/billing/credits').set('X-API-Key', account.adminKey).send({ units: 200 });
    expect(bought.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await worker?.stop();
    worker = null;

    stripe.autoDeliver = false;
    const [completed] = await stripe.completeCheckout(bought.body.checkout_session_id);
    expect((await postEvent(h, completed!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: false });
    expect((await postEvent(h, completed!, stripe.webhookSecret)).body).toEqual({ received: true, duplicate: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await h.http.get(`/v1/billing/credits/${bought.body.id as string}`).set('X-API-Key', account.adminKey)).body.state).toBe('pending');

    worker = await startInProcessWorker(h);
    const settled = await eventually(
      () => h.http.get(`/v1/billing/credits/${bought.body.id as string}`).set('X-API-Key', account.adminKey),
      (r) => r.body.state !== 'pending',
    );
    expect(settled.body.state).toBe('settled');
    expect((await accountOf(h, account.account.id)).purchasedBalance).toBe(200);
    expect(await ledgerOf(h, account.account.id, ['purchase'])).toHaveLength(1);
  });
});
