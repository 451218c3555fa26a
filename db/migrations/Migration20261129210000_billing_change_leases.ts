import { Migration } from '@mikro-orm/migrations';

/**
 * One change of an account's subscription at a time (services/billing-change-leases.ts): a row per
 * account whose plan change or cancellation is in progress, with the lease's end, so that a process
 * lost mid-change frees the account when the lease runs out. Rows are deleted when the change ends.
 */
export class Migration20261129210000_billing_change_leases extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "billing_change_leases" ("account_id" varchar(40) not null, "token" uuid not null, "lease_until" timestamptz not null, constraint "billing_change_leases_pkey" primary key ("account_id"));`,
    );
    this.addSql(
      `alter table "billing_change_leases" add constraint "billing_change_leases_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "billing_change_leases";`);
  }
}
