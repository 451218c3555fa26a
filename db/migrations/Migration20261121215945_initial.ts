import { Migration } from '@mikro-orm/migrations';

export class Migration20261121215945_initial extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "accounts" ("id" varchar(40) not null, "email" varchar(320) not null, "full_name" varchar(200) null, "plan" varchar(20) not null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), constraint "accounts_pkey" primary key ("id"));`);
    this.addSql(`alter table "accounts" add constraint "accounts_email_unique" unique ("email");`);

    this.addSql(`create table "workspaces" ("id" varchar(40) not null, "account_id" varchar(40) not null, "name" varchar(200) not null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), constraint "workspaces_pkey" primary key ("id"));`);
    this.addSql(`create index "workspaces_account_id_index" on "workspaces" ("account_id");`);

    this.addSql(`create table "api_keys" ("id" varchar(40) not null, "workspace_id" varchar(40) not null, "kind" varchar(10) not null, "name" varchar(200) not null, "secret_hash" varchar(64) not null, "display_prefix" varchar(40) not null, "last_four" varchar(4) not null, "created_at" timestamptz not null default now(), "last_used_at" timestamptz null, "expires_at" timestamptz null, "ends_at" timestamptz null, "revoked_at" timestamptz null, "revoke_reason" varchar(20) null, "rotated_from_id" varchar(40) null, "rotated_at" timestamptz null, constraint "api_keys_pkey" primary key ("id"));`);
    this.addSql(`create index "api_keys_workspace_id_index" on "api_keys" ("workspace_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);
    this.addSql(`create index "api_keys_expires_at_index" on "api_keys" ("expires_at");`);

    this.addSql(`alter table "workspaces" add constraint "workspaces_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_rotated_from_id_foreign" foreign key ("rotated_from_id") references "api_keys" ("id") on update cascade on delete set null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "workspaces" drop constraint "workspaces_account_id_foreign";`);

    this.addSql(`alter table "api_keys" drop constraint "api_keys_workspace_id_foreign";`);

    this.addSql(`alter table "api_keys" drop constraint "api_keys_rotated_from_id_foreign";`);

    this.addSql(`drop table if exists "accounts" cascade;`);

    this.addSql(`drop table if exists "workspaces" cascade;`);

    this.addSql(`drop table if exists "api_keys" cascade;`);
  }

}
