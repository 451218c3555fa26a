import { EntitySchema, type Opt } from '@mikro-orm/core';
import type { PaidPlan, PlanName } from '../../config/plans';

export interface Account {
  id: string;
  email: string;
  fullName: string | null;
  plan: PlanName;
  /** Credits granted each calendar month (UTC); copied from the plan, set by contract for `contract`. */
  monthlyAllowance: number;
  /** What is left of this month's allowance; drawn before the purchased balance. */
  allowanceRemaining: number;
  /** The month (`YYYY-MM`, UTC) `allowanceRemaining` belongs to; a new month resets it. */
  allowancePeriod: string;
  /**
   * The largest monthly allowance granted during `allowancePeriod`: an upgrade adds to what is left only
   * what its allowance brings above it, so moving down and up again within a month grants nothing twice.
   */
  allowanceCeiling: Opt<number>;
  /** Purchased credits; never expire. */
  purchasedBalance: number;
  /** Signs in with password + emailed code (an address of STAFF_EMAIL_DOMAINS, created by the operator CLI). */
  isStaff: boolean;
  /** scrypt hash (services/auth/secrets.ts); staff accounts only. */
  passwordHash: string | null;
  /** Set when deletion is asked: the account stops authenticating at once; its erasure workflow removes the row. */
  deletedAt: Date | null;
  /** Stripe customer, created at the account's first checkout. */
  stripeCustomerId: string | null;
  /** The Stripe subscription the plan follows (the latest one Stripe reported active). */
  subscriptionId: string | null;
  /** Its Stripe status as last reported (`active`, `past_due`, `canceled`, …). */
  subscriptionStatus: string | null;
  subscriptionPeriodEnd: Date | null;
  subscriptionCancelAtPeriodEnd: Opt<boolean>;
  /**
   * The plan the subscription moves to at `pendingPlanAt` (the end of its period), as Stripe holds it
   * in the subscription's schedule: a downgrade waiting for the period's end. Null: none waits.
   */
  pendingPlan: PaidPlan | null;
  pendingPlanAt: Date | null;
  /**
   * When the sweep last read the subscription from Stripe because no event had reported it past its
   * period's end (services/billing.ts, reconcileLapsedSubscriptions).
   */
  subscriptionCheckedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const AccountSchema = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    // Stored lower-cased by the service; unique so that one address is one account.
    email: { type: 'string', length: 320, unique: true },
    fullName: { type: 'string', length: 200, nullable: true },
    plan: { type: 'string', length: 20 },
    monthlyAllowance: { type: 'integer', default: 0 },
    allowanceRemaining: { type: 'integer', default: 0 },
    allowancePeriod: { type: 'string', length: 7, default: '1970-01' },
    allowanceCeiling: { type: 'integer', default: 0 },
    purchasedBalance: { type: 'integer', default: 0 },
    isStaff: { type: 'boolean', default: false },
    passwordHash: { type: 'text', nullable: true, lazy: true },
    deletedAt: { type: 'datetime', nullable: true },
    stripeCustomerId: { type: 'string', length: 255, nullable: true },
    subscriptionId: { type: 'string', length: 255, nullable: true },
    subscriptionStatus: { type: 'string', length: 40, nullable: true },
    subscriptionPeriodEnd: { type: 'datetime', nullable: true },
    subscriptionCancelAtPeriodEnd: { type: 'boolean', default: false },
    pendingPlan: { type: 'string', length: 20, nullable: true },
    pendingPlanAt: { type: 'datetime', nullable: true },
    subscriptionCheckedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() },
  },
});
