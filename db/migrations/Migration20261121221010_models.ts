import { Migration } from '@mikro-orm/migrations';

export class Migration20261121221010_models extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "credit_ledger" ("id" varchar(40) not null, "account_id" varchar(40) not null, "workspace_id" varchar(40) null, "kind" varchar(20) not null, "operation" varchar(40) not null, "allowance_delta" int not null, "balance_delta" int not null, "allowance_after" int not null, "balance_after" int not null, "reference" varchar(80) not null, "created_at" timestamptz not null default now(), constraint "credit_ledger_pkey" primary key ("id"));`);
    this.addSql(`create index "credit_ledger_account_id_created_at_index" on "credit_ledger" ("account_id", "created_at");`);

    this.addSql(`create table "idempotency_records" ("workspace_id" varchar(40) not null, "key" varchar(255) not null, "request_hash" varchar(64) not null, "state" varchar(20) not null, "response_status" int null, "response_body" text null, "response_headers" jsonb null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, constraint "idempotency_records_pkey" primary key ("workspace_id", "key"));`);
    this.addSql(`create index "idempotency_records_expires_at_index" on "idempotency_records" ("expires_at");`);

    this.addSql(`create table "outcomes" ("id" varchar(40) not null, "model_id" varchar(40) not null, "workspace_id" varchar(40) not null, "prediction_id" varchar(40) null, "features" jsonb not null, "actual" jsonb not null, "status" varchar(20) not null, "folded_in_version" int null, "created_at" timestamptz not null default now(), constraint "outcomes_pkey" primary key ("id"));`);
    this.addSql(`create index "outcomes_model_id_status_index" on "outcomes" ("model_id", "status");`);
    this.addSql(`create index "outcomes_prediction_id_index" on "outcomes" ("prediction_id");`);

    this.addSql(`create table "predictions" ("id" varchar(40) not null, "model_id" varchar(40) not null, "workspace_id" varchar(40) not null, "version_number" int not null, "http_request_id" varchar(40) not null, "features" jsonb not null, "output" jsonb not null, "created_at" timestamptz not null default now(), constraint "predictions_pkey" primary key ("id"));`);
    this.addSql(`create index "predictions_model_id_created_at_index" on "predictions" ("model_id", "created_at");`);

    this.addSql(`create table "request_log" ("id" varchar(40) not null, "workspace_id" varchar(40) not null, "account_id" varchar(40) not null, "key_id" varchar(40) null, "method" varchar(10) not null, "path" varchar(500) not null, "operation" varchar(60) not null, "status" int not null, "error_code" varchar(60) null, "credits" int not null default 0, "duration_ms" int not null, "created_at" timestamptz not null default now(), constraint "request_log_pkey" primary key ("id"));`);
    this.addSql(`create index "request_log_workspace_id_created_at_index" on "request_log" ("workspace_id", "created_at");`);
    this.addSql(`create index "request_log_account_id_created_at_index" on "request_log" ("account_id", "created_at");`);

    this.addSql(`create table "models" ("id" varchar(40) not null, "workspace_id" varchar(40) not null, "account_id" varchar(40) not null, "name" varchar(200) not null, "target" varchar(500) not null, "task" varchar(20) not null, "engine_id" varchar(60) not null, "feature_columns" jsonb not null, "status" varchar(20) not null, "explain" boolean not null default false, "auto_update" boolean not null default false, "current_version" int null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), "archived_at" timestamptz null, "deleted_at" timestamptz null, constraint "models_pkey" primary key ("id"));`);
    this.addSql(`create index "models_workspace_id_index" on "models" ("workspace_id");`);
    this.addSql(`create index "models_account_id_index" on "models" ("account_id");`);
    this.addSql(`create index "models_status_index" on "models" ("status");`);

    this.addSql(`create table "model_versions" ("id" varchar(40) not null, "model_id" varchar(40) not null, "number" int not null, "engine_id" varchar(60) not null, "engine_version" varchar(40) not null, "format_version" int not null, "artefact" bytea null, "artefact_bytes" int not null, "report" jsonb not null, "validation" jsonb not null, "top_factors" jsonb null, "context_rows" int not null, "outcomes_folded" int not null default 0, "trigger" varchar(20) not null, "created_at" timestamptz not null default now(), constraint "model_versions_pkey" primary key ("id"));`);
    this.addSql(`alter table "model_versions" add constraint "model_versions_model_id_number_unique" unique ("model_id", "number");`);

    this.addSql(`create table "model_context_chunks" ("id" varchar(40) not null, "model_id" varchar(40) not null, "version_number" int not null, "row_count" int not null, "data" bytea not null, "created_at" timestamptz not null default now(), constraint "model_context_chunks_pkey" primary key ("id"));`);
    this.addSql(`create index "model_context_chunks_model_id_version_number_index" on "model_context_chunks" ("model_id", "version_number");`);

    this.addSql(`alter table "models" add constraint "models_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "models" add constraint "models_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "model_versions" add constraint "model_versions_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "model_context_chunks" add constraint "model_context_chunks_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "accounts" add column "monthly_allowance" int not null default 0, add column "allowance_remaining" int not null default 0, add column "allowance_period" varchar(7) not null default '1970-01', add column "purchased_balance" int not null default 0;`);
    // Balances can never go negative, whatever the code above them does.
    this.addSql(`alter table "accounts" add constraint "accounts_allowance_remaining_nonnegative" check ("allowance_remaining" >= 0), add constraint "accounts_purchased_balance_nonnegative" check ("purchased_balance" >= 0);`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "model_versions" drop constraint "model_versions_model_id_foreign";`);

    this.addSql(`alter table "model_context_chunks" drop constraint "model_context_chunks_model_id_foreign";`);

    this.addSql(`drop table if exists "credit_ledger" cascade;`);

    this.addSql(`drop table if exists "idempotency_records" cascade;`);

    this.addSql(`drop table if exists "outcomes" cascade;`);

    this.addSql(`drop table if exists "predictions" cascade;`);

    this.addSql(`drop table if exists "request_log" cascade;`);

    this.addSql(`drop table if exists "models" cascade;`);

    this.addSql(`drop table if exists "model_versions" cascade;`);

    this.addSql(`drop table if exists "model_context_chunks" cascade;`);

    this.addSql(`alter table "accounts" drop column "monthly_allowance", drop column "allowance_remaining", drop column "allowance_period", drop column "purchased_balance";`);
  }

}
