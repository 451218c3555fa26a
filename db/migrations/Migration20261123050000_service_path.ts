import { Migration } from '@mikro-orm/migrations';

/**
 * Durable credit reservations, idempotency leases, a refund that can happen only once, and an index
 * for every sweep and prune.
 */
export class Migration20261123050000_service_path extends Migration {
  override async up(): Promise<void> {
    // A paid call's credits are held here from before its computation until its answer is stored
    // (settled) or it failed or was abandoned (released, by the call or by the sweep after the deadline).
    this.addSql(`create table "credit_reservations" ("id" varchar(40) not null, "account_id" varchar(40) not null, "workspace_id" varchar(40) not null, "operation" varchar(40) not null, "reference" varchar(80) not null, "from_allowance" int not null, "from_balance" int not null, "period" varchar(7) not null, "state" varchar(20) not null, "deadline" timestamptz not null, "created_at" timestamptz not null default now(), "closed_at" timestamptz null, constraint "credit_reservations_pkey" primary key ("id"), constraint "credit_reservations_state_check" check ("state" in ('held', 'settled', 'released')));`);
    this.addSql(`create index "credit_reservations_held_deadline_index" on "credit_reservations" ("deadline") where "state" = 'held';`);
    // A charge can be refunded at most once, whatever path (the call, the sweep) tries it.
    this.addSql(`create unique index "credit_ledger_refund_once" on "credit_ledger" ("reference") where "kind" = 'refund';`);

    // A call that died mid-way holds its key only until its lease ends, not for 24 hours.
    this.addSql(`alter table "idempotency_records" add column "lease_until" timestamptz not null default now();`);

    // Request budgets shared by every API process (rate-limiter-flexible's table layout).
    this.addSql(`create table "rate_limits" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, constraint "rate_limits_pkey" primary key ("key"));`);
    this.addSql(`create index "rate_limits_expire_index" on "rate_limits" ("expire");`);

    this.addSql(`create index "request_log_created_at_index" on "request_log" ("created_at");`);
    this.addSql(`create index "predictions_created_at_index" on "predictions" ("created_at");`);
    this.addSql(`create index "api_keys_ends_at_index" on "api_keys" ("ends_at") where "revoked_at" is null;`);
    this.addSql(`create index "outcomes_model_id_created_at_index" on "outcomes" ("model_id", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "outcomes_model_id_created_at_index";`);
    this.addSql(`drop index if exists "api_keys_ends_at_index";`);
    this.addSql(`drop index if exists "predictions_created_at_index";`);
    this.addSql(`drop index if exists "request_log_created_at_index";`);
    this.addSql(`drop table if exists "rate_limits";`);
    this.addSql(`alter table "idempotency_records" drop column "lease_until";`);
    this.addSql(`drop index if exists "credit_ledger_refund_once";`);
    this.addSql(`drop table if exists "credit_reservations" cascade;`);
  }
}
