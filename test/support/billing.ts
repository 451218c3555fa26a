import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { startStripeStandIn, type StripeStandIn } from '../../scripts/lib/stripe-standin';
import { AccountSchema, CreditLedgerSchema, type Account } from '../../db/entities';
import { startHarness, type Harness, type HarnessOptions } from './harness';

export const WEBHOOK_PATH = '/v1/integrations/stripe/webhook';

/**
 * The service for a billing test file, its stripe SDK pointed at a fresh Stripe stand-in (a local
 * HTTP server speaking the Stripe endpoints the service calls), whose events go to this service.
 */
export async function startBillingHarness(options: HarnessOptions = {}): Promise<{ h: Harness; stripe: StripeStandIn }> {
  const stripe = await startStripeStandIn();
  const h = await startHarness({
    ...options,
    config: { STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_WEBHOOK_SECRET: stripe.webhookSecret, STRIPE_API_URL: stripe.url, ...options.config },
  });
  stripe.webhookUrl = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}${WEBHOOK_PATH}`;
  const stop = h.stop.bind(h);
  h.stop = async () => {
    await stop();
    await stripe.close();
  };
  return { h, stripe };
}

/**
 * A build subscription paid through the stand-in as the service's checkout makes it (the account named
 * in the session's and the subscription's metadata), outside the service: the subscription's id.
 */
export async function payBuildSubscriptionAs(stripe: StripeStandIn, sdk: Stripe, customer: string, accountId: string): Promise<string> {
  const price = (await sdk.prices.list({ lookup_keys: ['plan_build'], active: true, limit: 1 })).data[0]!;
  const session = await sdk.checkout.sessions.create({
    mode: 'subscription',
    customer,
    client_reference_id: accountId,
    line_items: [{ price: price.id, quantity: 1 }],
    metadata: { account_id: accountId, plan: 'build' },
    subscription_data: { metadata: { account_id: accountId, plan: 'build' } },
    success_url: 'https://example.test/ok',
  });
  await stripe.completeCheckout(session.id);
  return stripe.sessions.get(session.id)?.subscription as string;
}

/** Posts an event through the contract-checked agent, signed with the stripe SDK's test helper. */
export function postEvent(h: Harness, event: Stripe.Event | string, secret: string, tamper?: (payload: string) => string) {
  const payload = typeof event === 'string' ? event : JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret });
  return h.http
    .post(WEBHOOK_PATH)
    .set('content-type', 'application/json')
    .set('stripe-signature', header)
    .send(tamper ? tamper(payload) : payload);
}

export async function accountOf(h: Harness, accountId: string): Promise<Account> {
  return h.orm.em.fork().findOneOrFail(AccountSchema, { id: accountId }, { refresh: true });
}

export async function ledgerOf(h: Harness, accountId: string, kinds: string[]) {
  const rows = await h.orm.em.fork().find(CreditLedgerSchema, { accountId, kind: { $in: kinds as never[] } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return rows.map((r) => ({ kind: r.kind, operation: r.operation, allowanceDelta: r.allowanceDelta, balanceDelta: r.balanceDelta, reference: r.reference }));
}

/** Polls until `check` holds (the webhook answers before the workflow settles). */
export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
