import { Migration } from '@mikro-orm/migrations';

/**
 * Slots of webhook attempts in flight (services/webhooks/attempt-slots.ts), by scope: an account's
 * (`account:<id>`) and an endpoint's (`endpoint:<id>`). Each slot row is leased by one delivery's
 * attempt until it ends (the row deleted) or its lease runs out (a worker lost mid-attempt); a slot is
 * reused in place. Rows go with their account.
 */
export class Migration20261129193000_webhook_attempt_slots extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "webhook_attempt_slots" ("scope" varchar(80) not null, "slot" smallint not null, "account_id" varchar(40) not null, "delivery_id" varchar(40) not null, "expires_at" timestamptz not null, constraint "webhook_attempt_slots_pkey" primary key ("scope", "slot"));`,
    );
    this.addSql(
      `alter table "webhook_attempt_slots" add constraint "webhook_attempt_slots_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(`create index "webhook_attempt_slots_account_id_index" on "webhook_attempt_slots" ("account_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhook_attempt_slots";`);
  }
}
