import { Migration } from '@mikro-orm/migrations';

/**
 * A plan change Stripe holds for the end of the subscription's period (a downgrade, as a Stripe
 * subscription schedule's next phase): the plan it moves to and when. Written from Stripe's events
 * only (services/billing.ts applySubscription); shown by GET /v1/billing/subscription.
 */
export class Migration20261129200000_pending_plan extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "pending_plan" varchar(20) null, add column "pending_plan_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "accounts" drop column if exists "pending_plan", drop column if exists "pending_plan_at";`);
  }
}
