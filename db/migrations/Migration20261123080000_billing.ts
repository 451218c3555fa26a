import { Migration } from '@mikro-orm/migrations';

/** Billing with Stripe: the account's customer and subscription, credit purchases, handled events. */
export class Migration20261123080000_billing extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "stripe_customer_id" varchar(255) null, add column "subscription_id" varchar(255) null, add column "subscription_status" varchar(40) null, add column "subscription_period_end" timestamptz null, add column "subscription_cancel_at_period_end" boolean not null default false;`);
    // One customer is one account: a webhook finds its account by customer id.
    this.addSql(`alter table "accounts" add constraint "accounts_stripe_customer_id_unique" unique ("stripe_customer_id");`);

    this.addSql(`create table "credit_purchases" ("id" varchar(40) not null, "account_id" varchar(40) not null, "workspace_id" varchar(40) not null, "plan" varchar(20) not null, "units" int not null, "amount" int not null, "currency" varchar(3) not null, "state" varchar(20) not null, "checkout_session_id" varchar(255) null, "payment_url" text null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), "closed_at" timestamptz null, "closed_by" varchar(255) null, constraint "credit_purchases_pkey" primary key ("id"), constraint "credit_purchases_state_check" check ("state" in ('pending', 'settled', 'failed', 'expired')), constraint "credit_purchases_units_check" check ("units" > 0 and "units" % 100 = 0));`);
    this.addSql(`create index "credit_purchases_account_id_created_at_index" on "credit_purchases" ("account_id", "created_at");`);
    this.addSql(`alter table "credit_purchases" add constraint "credit_purchases_checkout_session_id_unique" unique ("checkout_session_id");`);
    this.addSql(`alter table "credit_purchases" add constraint "credit_purchases_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`);
    // A purchase is credited at most once, whatever path (event, retry, reconciliation) tries it.
    this.addSql(`create unique index "credit_ledger_purchase_once" on "credit_ledger" ("reference") where "kind" = 'purchase';`);
    this.addSql(`create table "stripe_events" ("id" varchar(255) not null, "type" varchar(100) not null, "created_at" timestamptz not null, "received_at" timestamptz not null default now(), constraint "stripe_events_pkey" primary key ("id"));`);
    this.addSql(`create index "stripe_events_received_at_index" on "stripe_events" ("received_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "stripe_events" cascade;`);
    this.addSql(`drop index if exists "credit_ledger_purchase_once";`);
    this.addSql(`drop table if exists "credit_purchases" cascade;`);
    this.addSql(`alter table "accounts" drop constraint "accounts_stripe_customer_id_unique";`);
    this.addSql(`alter table "accounts" drop column "stripe_customer_id", drop column "subscription_id", drop column "subscription_status", drop column "subscription_period_end", drop column "subscription_cancel_at_period_end";`);
  }
}
