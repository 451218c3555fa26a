import { Migration } from '@mikro-orm/migrations';

/**
 * The ids of the accounts the erasure removed (services/account-deletion.ts eraseAccountStep), nothing
 * else: a Stripe subscription event naming an account that is gone is one of ours, set to end with its
 * period, where an account id this service never had belongs to someone else on the same Stripe account.
 */
export class Migration20261129100000_erased_accounts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "erased_accounts" ("id" varchar(40) not null, "erased_at" timestamptz not null default now(), constraint "erased_accounts_pkey" primary key ("id"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "erased_accounts";`);
  }
}
