import type { Billing } from '../../services/billing';
import { presentPlans, presentPurchase, presentSubscription } from '../billing-presenters';
import { route, type AnyRoute } from '../route';
import { pageOf, pageQuerySchema } from '../schemas/common';
import { requireAuth } from './helpers';
import {
  buyCreditsBodySchema,
  changePlanBodySchema,
  checkoutBodySchema,
  checkoutSessionSchema,
  planListSchema,
  portalSessionSchema,
  purchaseParamsSchema,
  purchaseSchema,
  stripeEventSchema,
  stripeSignatureHeadersSchema,
  subscriptionSchema,
  webhookAckSchema,
} from '../schemas/billing';

const PROVIDER_ERRORS: Array<[number, string]> = [
  [502, 'PAYMENT_PROVIDER_ERROR'],
  [503, 'BILLING_UNAVAILABLE'],
  [503, 'PRICE_NOT_CONFIGURED'],
];

export function billingRoutes(deps: { billing: Billing }): AnyRoute[] {
  const { billing } = deps;
  return [
    route({
      method: 'get',
      path: '/v1/plans',
      summary: 'Public pricing: every plan with its price, allowance, quotas and the price of 100 credits',
      tag: 'Billing',
      auth: 'public',
      query: pageQuerySchema(),
      responses: { 200: { description: 'The plans, a page of them.', schema: planListSchema } },
      errors: [],
      handler(ctx, { query }) {
        ctx.body = pageOf(presentPlans(), query);
      },
    }),
    route({
      method: 'post',
      path: '/v1/billing/checkout',
      summary: 'Open a Stripe Checkout Session to subscribe to a plan (the plan changes when Stripe reports the subscription active)',
      tag: 'Billing',
      auth: 'admin',
      idempotent: true,
      idempotencyScope: 'account',
      body: checkoutBodySchema,
      responses: { 200: { description: 'The Checkout Session to send the customer to.', schema: checkoutSessionSchema } },
      errors: [[409, 'SUBSCRIPTION_EXISTS'], [409, 'PLAN_BY_CONTRACT'], [409, 'BILLING_CHANGE_IN_PROGRESS'], [409, 'ACCOUNT_DELETED'], ...PROVIDER_ERRORS],
      async handler(ctx, { body, auth }) {
        const session = await billing.checkout(requireAuth(auth).accountId, body.plan);
        ctx.body = { id: session.id, url: session.url, expires_at: session.expiresAt.toISOString() };
      },
    }),
    route({
      method: 'post',
      path: '/v1/billing/credits',
      summary: 'Buy credits in blocks of 100 at the plan’s unit price: a purchase and its payment URL (credited when Stripe settles it)',
      tag: 'Billing',
      auth: 'admin',
      idempotent: true,
      idempotencyScope: 'account',
      body: buyCreditsBodySchema,
      responses: { 200: { description: 'The pending purchase with its payment URL.', schema: purchaseSchema } },
      errors: [[409, 'PLAN_HAS_NO_UNIT_PRICE'], [409, 'PURCHASED_BALANCE_LIMIT'], [409, 'TOO_MANY_PENDING_PURCHASES'], ...PROVIDER_ERRORS],
      async handler(ctx, { body, auth }) {
        const caller = requireAuth(auth);
        ctx.body = presentPurchase(await billing.buyCredits(caller, body.units));
      },
    }),
    route({
      method: 'get',
      path: '/v1/billing/credits/:purchaseId',
      summary: 'A credit purchase and its state (our addition to the contract)',
      tag: 'Billing',
      auth: 'admin',
      params: purchaseParamsSchema,
      responses: { 200: { description: 'The purchase.', schema: purchaseSchema } },
      errors: [[404, 'NOT_FOUND']],
      async handler(ctx, { params, auth }) {
        ctx.body = presentPurchase(await billing.purchase(requireAuth(auth).accountId, params.purchaseId));
      },
    }),
    route({
      method: 'post',
      path: '/v1/billing/portal',
      summary: 'A Stripe billing portal session for the account',
      tag: 'Billing',
      auth: 'admin',
      idempotent: true,
      idempotencyScope: 'account',
      secretAnswer: true,
      responses: { 200: { description: 'Where to send the customer.', schema: portalSessionSchema } },
      errors: [[400, 'NO_BILLING_ACCOUNT'], [502, 'PAYMENT_PROVIDER_ERROR'], [503, 'BILLING_UNAVAILABLE']],
      async handler(ctx, { auth }) {
        ctx.body = await billing.portal(requireAuth(auth).accountId);
      },
    }),
    route({
      method: 'get',
      path: '/v1/billing/subscription',
      summary: 'The plan, its Stripe subscription and the credits left (allowance and purchased balance)',
      tag: 'Billing',
      auth: 'admin',
      responses: { 200: { description: 'Subscription and balance.', schema: subscriptionSchema } },
      errors: [],
      async handler(ctx, { auth }) {
        ctx.body = presentSubscription(await billing.subscription(requireAuth(auth).accountId));
      },
    }),
    route({
      method: 'patch',
      path: '/v1/billing/subscription',
      summary:
        'Change the plan through Stripe: an upgrade takes effect when Stripe confirms it (this month’s allowance raised at once); a downgrade at the end of the current period (pending_plan, plan_changes_at), nothing credited; a subscription set to end goes on',
      tag: 'Billing',
      auth: 'admin',
      body: changePlanBodySchema,
      responses: { 200: { description: 'The subscription, with the plan asked for in pending_plan (and, for a downgrade, when it takes effect in plan_changes_at).', schema: subscriptionSchema } },
      errors: [[409, 'NO_ACTIVE_SUBSCRIPTION'], [409, 'BILLING_CHANGE_IN_PROGRESS'], [409, 'ACCOUNT_DELETED'], ...PROVIDER_ERRORS],
      async handler(ctx, { body, auth }) {
        const changed = await billing.changePlan(requireAuth(auth).accountId, body.plan);
        ctx.body = presentSubscription(changed, { pendingPlan: changed.pendingPlan, planChangesAt: changed.planChangesAt, cancelAtPeriodEnd: changed.cancelAtPeriodEnd });
      },
    }),
    route({
      method: 'delete',
      path: '/v1/billing/subscription',
      summary: 'Cancel the subscription at the end of its period (the plan stays until then; a downgrade waiting for that end is dropped)',
      tag: 'Billing',
      auth: 'admin',
      responses: { 200: { description: 'The subscription, cancel_at_period_end set.', schema: subscriptionSchema } },
      errors: [[409, 'NO_ACTIVE_SUBSCRIPTION'], [409, 'BILLING_CHANGE_IN_PROGRESS'], [409, 'ACCOUNT_DELETED'], [502, 'PAYMENT_PROVIDER_ERROR'], [503, 'BILLING_UNAVAILABLE']],
      async handler(ctx, { auth }) {
        const cancelled = await billing.cancel(requireAuth(auth).accountId);
        ctx.body = presentSubscription(cancelled, { pendingPlan: cancelled.pendingPlan, planChangesAt: cancelled.planChangesAt, cancelAtPeriodEnd: cancelled.cancelAtPeriodEnd });
      },
    }),
    route({
      method: 'post',
      path: '/v1/integrations/stripe/webhook',
      summary: 'Stripe events (never called by clients): signature checked on the raw bytes, each event handled once',
      tag: 'Billing',
      auth: 'public',
      bodyKind: 'raw',
      headers: stripeSignatureHeadersSchema,
      rawBodyDoc: { contentType: 'application/json', schema: stripeEventSchema, description: 'The event exactly as Stripe signed it.' },
      responses: { 200: { description: 'Handled, or seen before and ignored.', schema: webhookAckSchema } },
      errors: [
        [400, 'INVALID_SIGNATURE'],
        [503, 'BILLING_UNAVAILABLE'],
      ],
      async handler(ctx, { upload }) {
        const signature = ctx.get('stripe-signature') || undefined;
        const { duplicate } = await billing.handleWebhook(upload?.content ?? Buffer.alloc(0), signature);
        ctx.body = { received: true, duplicate };
      },
    }),
  ];
}
