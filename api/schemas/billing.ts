import { BILLING_CURRENCY, CREDIT_BLOCK, PAID_PLANS, PLAN_NAMES } from '../../config/plans';
import { PURCHASE_STATES } from '../../db/entities';
import { isoDateTime, paginationSchema } from './common';
import { z } from '../zod';

const money = (description: string) => z.number().int().min(0).openapi({ description: `${description}, in minor units of the currency (cents).` });

export const planSchema = z
  .object({
    name: z.enum(PLAN_NAMES),
    currency: z.string().openapi({ example: BILLING_CURRENCY }),
    monthly_price: money('Price of a month').nullable().openapi({ description: 'Price of a month in minor units; null: by contract.' }),
    monthly_allowance: z.number().int().nullable().openapi({ description: 'Credits granted each calendar month (UTC); null: by contract.' }),
    max_models: z.number().int().nullable().openapi({ description: 'Models per account (training and serving); null: by contract.' }),
    max_training_rows: z.number().int().nullable(),
    credit_block_size: z.literal(CREDIT_BLOCK).openapi({ description: 'Credits in one purchasable block.' }),
    credit_block_price: money('Price of one block of 100 credits')
      .nullable()
      .openapi({ description: 'Price of a block of 100 credits in minor units; null: the plan cannot buy credits.' }),
    min_credit_units: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The fewest credits one purchase may buy on this plan (a whole number of blocks costing at least Stripe's minimum charge, 0.50 USD); null: the plan cannot buy credits." }),
    self_serve: z.boolean().openapi({ description: 'Whether POST /v1/billing/checkout offers this plan.' }),
  })
  .openapi('Plan');

export const planListSchema = z.object({ data: z.array(planSchema), pagination: paginationSchema }).openapi('PlanList');

const paidPlan = z.enum(PAID_PLANS).openapi({ description: 'A plan offered through Checkout.' });

export const checkoutBodySchema = z.object({ plan: paidPlan }).strict().openapi('CheckoutRequest');

export const checkoutSessionSchema = z
  .object({
    id: z.string().openapi({ description: 'The Stripe Checkout Session.', example: 'cs_test_a1b2c3' }),
    url: z.string().openapi({ description: 'Where the customer pays.' }),
    expires_at: isoDateTime,
  })
  .openapi('CheckoutSession');

export const buyCreditsBodySchema = z
  .object({
    units: z
      .number()
      .int()
      .positive()
      .multipleOf(CREDIT_BLOCK)
      .max(10_000_000)
      .openapi({ description: `Credits to buy: a positive multiple of ${CREDIT_BLOCK}, at least the plan's \`min_credit_units\` (GET /v1/plans).`, example: 500 }),
  })
  .strict()
  .openapi('BuyCreditsRequest');

export const purchaseSchema = z
  .object({
    id: z.string().openapi({ example: 'pur_3kTMd9Q2x8Wm1pZr7YvB0c' }),
    state: z.enum(PURCHASE_STATES).openapi({ description: 'pending until Stripe settles the payment; settled (credited once), failed or expired.' }),
    units: z.number().int(),
    amount: money('Price of the purchase'),
    currency: z.string(),
    payment_url: z.string().nullable().openapi({ description: 'Where the customer pays (Stripe Checkout).' }),
    checkout_session_id: z.string().nullable(),
    expires_at: isoDateTime.openapi({ description: 'When the payment page stops accepting payment.' }),
    created_at: isoDateTime,
    closed_at: isoDateTime.nullable(),
    units_reversed: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Credits taken back from the purchased balance because Stripe reports the payment refunded or withheld by a dispute (given back when a dispute is won).' }),
  })
  .openapi('CreditPurchase');

export const purchaseParamsSchema = z.object({ purchaseId: z.string().min(1).max(64) });

export const portalSessionSchema = z.object({ url: z.string().openapi({ description: 'The Stripe billing portal of the account.' }) }).openapi('BillingPortalSession');

export const subscriptionSchema = z
  .object({
    plan: z.enum(PLAN_NAMES),
    status: z.string().openapi({ description: 'The Stripe subscription status (active, past_due, canceled, …), or none.', example: 'active' }),
    subscription_id: z.string().nullable(),
    current_period_end: isoDateTime.nullable(),
    cancel_at_period_end: z.boolean(),
    pending_plan: z
      .enum(PAID_PLANS)
      .nullable()
      .openapi({
        description:
          'A plan change not in effect yet. A downgrade waits for the end of the current Stripe period (`plan_changes_at`): the plan, its limits and its price stay until then, and nothing is credited. After PATCH with an upgrade: the plan asked of Stripe, which becomes `plan` when Stripe confirms it (`plan_changes_at` null). Null: nothing waits.',
      }),
    plan_changes_at: isoDateTime
      .nullable()
      .openapi({ description: 'When `pending_plan` becomes `plan`: the end of the current Stripe period for a downgrade; null for an upgrade (at once, once Stripe confirms) or when nothing waits.' }),
    billing_account: z.boolean().openapi({ description: 'Whether the account has a Stripe customer (it checked out once).' }),
    monthly_allowance: z.number().int(),
    allowance_remaining: z.number().int(),
    allowance_period: z.string().openapi({ description: 'The month (UTC) the allowance belongs to.', example: '2026-11' }),
    purchased_balance: z.number().int(),
    credits_remaining: z.number().int().openapi({ description: 'allowance_remaining + purchased_balance.' }),
  })
  .openapi('Subscription');

export const changePlanBodySchema = z.object({ plan: paidPlan }).strict().openapi('ChangePlanRequest');

export const stripeSignatureHeadersSchema = z.object({
  'stripe-signature': z.string().openapi({ description: 'Stripe-Signature: `t=<timestamp>,v1=<HMAC-SHA256 of "<t>.<raw body>">`, checked on the raw bytes.' }),
});

export const stripeEventSchema = z
  .object({ id: z.string(), type: z.string(), created: z.number().int(), data: z.object({ object: z.record(z.string(), z.unknown()) }).catchall(z.unknown()) })
  .catchall(z.unknown())
  .openapi('StripeEvent', { description: 'A Stripe event, as Stripe sends it.' });

export const webhookAckSchema = z
  .object({ received: z.literal(true), duplicate: z.boolean().openapi({ description: 'The event was handled before and was ignored.' }) })
  .openapi('StripeWebhookAck');
