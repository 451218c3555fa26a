import { Migration } from '@mikro-orm/migrations';

/**
 * Slots of a workspace's webhook attempts in flight (services/webhooks/attempt-slots.ts): at most
 * WEBHOOK_ATTEMPTS_PER_WORKSPACE rows live per workspace, each leased by one delivery's attempt until
 * it ends or its lease runs out (a worker lost mid-attempt). A slot is reused in place, so the table
 * holds at most that many rows per workspace and needs no sweep.
 */
export class Migration20261129193000_webhook_attempt_slots extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "webhook_attempt_slots" ("workspace_id" varchar(40) not null, "slot" smallint not null, "delivery_id" varchar(40) not null, "expires_at" timestamptz not null, constraint "webhook_attempt_slots_pkey" primary key ("workspace_id", "slot"));`,
    );
    this.addSql(
      `alter table "webhook_attempt_slots" add constraint "webhook_attempt_slots_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhook_attempt_slots";`);
  }
}
