import { CREDIT_BLOCK, BILLING_CURRENCY, PAID_PLANS, PLAN_NAMES, PLAN_PRICES, PLANS, minimumCreditUnits, type PaidPlan } from '../config/plans';
import type { CreditPurchase } from '../db/entities';
import type { SubscriptionState } from '../services/billing';
import { remainingOf } from '../services/credits';

// The contract's shapes of billing values; services never build HTTP bodies.

export function presentPlans() {
  return PLAN_NAMES.map((name) => ({
      name,
      currency: BILLING_CURRENCY,
      monthly_price: PLAN_PRICES[name].monthly,
      monthly_allowance: PLANS[name].monthlyAllowance,
      max_models: PLANS[name].maxModels,
      max_training_rows: PLANS[name].maxTrainingRows,
      credit_block_size: CREDIT_BLOCK,
      credit_block_price: PLANS[name].canBuyCredits ? PLAN_PRICES[name].perCreditBlock : null,
      min_credit_units: PLANS[name].canBuyCredits && PLAN_PRICES[name].perCreditBlock !== null ? minimumCreditUnits(PLAN_PRICES[name].perCreditBlock) : null,
    self_serve: (PAID_PLANS as readonly string[]).includes(name),
  }));
}

export function presentPurchase(p: CreditPurchase) {
  return {
    id: p.id,
    state: p.state,
    units: p.units,
    amount: p.amount,
    currency: p.currency,
    payment_url: p.paymentUrl,
    checkout_session_id: p.checkoutSessionId,
    expires_at: p.expiresAt.toISOString(),
    created_at: p.createdAt.toISOString(),
    closed_at: p.closedAt ? p.closedAt.toISOString() : null,
    units_reversed: p.unitsReversed,
  };
}

/**
 * `extra`: what a PATCH or DELETE just asked of Stripe, shown before its events are stored; without
 * it, the change waiting as Stripe's events last reported it (a downgrade at the period's end).
 */
export function presentSubscription(state: SubscriptionState, extra: { pendingPlan?: PaidPlan | null; planChangesAt?: Date | null; cancelAtPeriodEnd?: boolean } = {}) {
  const a = state.account;
  const pendingPlan = extra.pendingPlan !== undefined ? extra.pendingPlan : a.pendingPlan;
  const planChangesAt = extra.pendingPlan !== undefined ? (extra.planChangesAt ?? null) : a.pendingPlanAt;
  return {
    plan: a.plan,
    status: a.subscriptionStatus ?? 'none',
    subscription_id: a.subscriptionId,
    current_period_end: a.subscriptionPeriodEnd ? a.subscriptionPeriodEnd.toISOString() : null,
    cancel_at_period_end: extra.cancelAtPeriodEnd ?? a.subscriptionCancelAtPeriodEnd,
    pending_plan: pendingPlan,
    plan_changes_at: planChangesAt ? planChangesAt.toISOString() : null,
    billing_account: state.hasBillingAccount,
    monthly_allowance: a.monthlyAllowance,
    allowance_remaining: a.allowanceRemaining,
    allowance_period: a.allowancePeriod,
    purchased_balance: a.purchasedBalance,
    credits_remaining: remainingOf(a),
  };
}
