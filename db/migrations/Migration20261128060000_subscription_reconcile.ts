import { Migration } from '@mikro-orm/migrations';

/**
 * `accounts.subscription_checked_at`, and an index of the live subscriptions by the end of their
 * period: the sweep reads from Stripe a subscription still live here an hour past its period's end (the
 * event renewing or ending it never came) and applies it (services/billing.ts,
 * reconcileLapsedSubscriptions); the column keeps an account Stripe still shows past its period from
 * being asked at every sweep.
 */
export class Migration20261128060000_subscription_reconcile extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "subscription_checked_at" timestamptz null;`);
    this.addSql(
      `create index "accounts_live_subscription_period_end_index" on "accounts" ("subscription_period_end") where "subscription_status" in ('active', 'trialing', 'past_due') and "deleted_at" is null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "accounts_live_subscription_period_end_index";`);
    this.addSql(`alter table "accounts" drop column "subscription_checked_at";`);
  }
}
