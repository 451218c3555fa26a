import { Migration } from '@mikro-orm/migrations';

/**
 * `subscription_checkouts`: every subscription Checkout Session the service opened, until Stripe's
 * event about it (completed or expired) has been handled or the sweep has asked Stripe about it. A
 * paid session whose `checkout.session.completed` and `customer.subscription.created` never arrived
 * (an endpoint down beyond Stripe's retries, event types unticked in the dashboard) left the account on
 * free while Stripe billed it: nothing here knew the subscription existed (services/billing.ts,
 * reconcileSubscriptionCheckouts).
 */
export class Migration20261128110000_subscription_checkouts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "subscription_checkouts" (
      "session_id" varchar(255) not null,
      "account_id" varchar(40) not null,
      "created_at" timestamptz not null default now(),
      "expires_at" timestamptz not null,
      "checked_at" timestamptz null,
      "closed_at" timestamptz null,
      constraint "subscription_checkouts_pkey" primary key ("session_id"));`);
    this.addSql(`create index "subscription_checkouts_open_index" on "subscription_checkouts" ("created_at") where "closed_at" is null;`);
    this.addSql(`create index "subscription_checkouts_account_index" on "subscription_checkouts" ("account_id");`);
    this.addSql(`alter table "subscription_checkouts" add constraint "subscription_checkouts_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "subscription_checkouts";`);
  }
}
