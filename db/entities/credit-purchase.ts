import { EntitySchema } from '@mikro-orm/core';
import type { PlanName } from '../../config/plans';

export const PURCHASE_STATES = ['pending', 'settled', 'failed', 'expired'] as const;
export type PurchaseState = (typeof PURCHASE_STATES)[number];

/**
 * A purchase of credit blocks (`pur_…`), paid through a Stripe Checkout Session in payment mode and
 * driven by the `purchase/<pur>` workflow. Credits reach the balance only when it is settled.
 */
export interface CreditPurchase {
  id: string;
  accountId: string;
  workspaceId: string;
  /** The plan whose unit price was charged. */
  plan: PlanName;
  units: number;
  /** Price paid, in minor units of `currency`. */
  amount: number;
  currency: string;
  state: PurchaseState;
  /** Null until the session exists (or when the call that created it died first). */
  checkoutSessionId: string | null;
  paymentUrl: string | null;
  /** When the Checkout Session stops accepting payment. */
  expiresAt: Date;
  createdAt: Date;
  /** When it left `pending`. */
  closedAt: Date | null;
  /** The Stripe event (or `reconcile`) that closed it. */
  closedBy: string | null;
  /** The PaymentIntent that paid it (from its Checkout Session), by which its charge's refunds and disputes find it. */
  paymentIntentId: string | null;
  /** Of `amount`, what was refunded or is withheld by disputes, as Stripe last reported it. */
  amountLost: number;
  /** Credits taken back from the purchased balance for `amountLost` (ledger kind `reversal`). */
  unitsReversed: number;
}

export const CreditPurchaseSchema = new EntitySchema<CreditPurchase>({
  name: 'CreditPurchase',
  tableName: 'credit_purchases',
  indexes: [{ properties: ['accountId', 'createdAt'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    accountId: { type: 'string', length: 40 },
    workspaceId: { type: 'string', length: 40 },
    plan: { type: 'string', length: 20 },
    units: { type: 'integer' },
    amount: { type: 'integer' },
    currency: { type: 'string', length: 3 },
    state: { type: 'string', length: 20 },
    checkoutSessionId: { type: 'string', length: 255, nullable: true },
    paymentUrl: { type: 'text', nullable: true },
    expiresAt: { type: 'datetime' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    closedAt: { type: 'datetime', nullable: true },
    closedBy: { type: 'string', length: 255, nullable: true },
    paymentIntentId: { type: 'string', length: 255, nullable: true, index: 'credit_purchases_payment_intent_id_index' },
    amountLost: { type: 'integer', default: 0 },
    unitsReversed: { type: 'integer', default: 0 },
  },
});

/** A Stripe event already handled: a repeated delivery is acknowledged and ignored. */
export interface StripeEventRecord {
  id: string;
  type: string;
  /** When Stripe created the event. */
  createdAt: Date;
  receivedAt: Date;
}

export const StripeEventSchema = new EntitySchema<StripeEventRecord>({
  name: 'StripeEvent',
  tableName: 'stripe_events',
  properties: {
    id: { type: 'string', primary: true, length: 255 },
    type: { type: 'string', length: 100 },
    createdAt: { type: 'datetime' },
    receivedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
