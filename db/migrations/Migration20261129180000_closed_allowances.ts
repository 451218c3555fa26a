import { Migration } from '@mikro-orm/migrations';

/**
 * The allowance a deleted account had left in its month, by the SHA-256 of its address (never the
 * address): an account made again with that address in the same month starts from it
 * (services/closed-allowances.ts). Rows of past months are pruned by the sweep.
 */
export class Migration20261129180000_closed_allowances extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "closed_allowances" ("address_hash" varchar(64) not null, "period" varchar(7) not null, "allowance_remaining" int not null, "closed_at" timestamptz not null default now(), constraint "closed_allowances_pkey" primary key ("address_hash", "period"));`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "closed_allowances";`);
  }
}
