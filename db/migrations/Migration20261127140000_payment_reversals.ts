import { Migration } from '@mikro-orm/migrations';

/**
 * Refunded and disputed credit purchases give their credits back (services/billing.ts,
 * `reversePurchase`): a purchase knows its PaymentIntent, how much of its price Stripe reports lost
 * and how many credits were taken back for it. Taking credits back that were already spent leaves the
 * purchased balance below zero (a debt the allowance and the next purchase cover), so the balance's
 * check constraint goes.
 */
export class Migration20261127140000_payment_reversals extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "credit_purchases" add column "payment_intent_id" varchar(255) null, add column "amount_lost" int not null default 0, add column "units_reversed" int not null default 0;`,
    );
    this.addSql(`create index "credit_purchases_payment_intent_id_index" on "credit_purchases" ("payment_intent_id");`);
    this.addSql(`alter table "accounts" drop constraint "accounts_purchased_balance_nonnegative";`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "accounts" add constraint "accounts_purchased_balance_nonnegative" check ("purchased_balance" >= 0);`);
    this.addSql(`drop index "credit_purchases_payment_intent_id_index";`);
    this.addSql(`alter table "credit_purchases" drop column "payment_intent_id", drop column "amount_lost", drop column "units_reversed";`);
  }
}
