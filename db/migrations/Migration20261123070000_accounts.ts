import { Migration } from '@mikro-orm/migrations';

/** Web sessions: sign-in challenges, sessions with their refresh-token families, OAuth identities, staff passwords, account deletion. */
export class Migration20261123070000_accounts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "is_staff" boolean not null default false, add column "password_hash" text null, add column "deleted_at" timestamptz null;`);
    // The deletion sweep finds accounts whose erasure has not finished.
    this.addSql(`create index "accounts_deleted_at_index" on "accounts" ("deleted_at") where "deleted_at" is not null;`);

    // One emailed link + code (kind magic_link) or one staff code (kind staff_code) per request; a new
    // request voids the previous one of the same address and kind.
    this.addSql(`create table "sign_in_challenges" ("id" varchar(40) not null, "email" varchar(320) not null, "kind" varchar(20) not null, "token_hash" char(64) null, "code_digest" char(64) not null, "attempts" int not null default 0, "expires_at" timestamptz not null, "closed_at" timestamptz null, "created_at" timestamptz not null default now(), constraint "sign_in_challenges_pkey" primary key ("id"), constraint "sign_in_challenges_kind_check" check ("kind" in ('magic_link', 'staff_code')));`);
    this.addSql(`create unique index "sign_in_challenges_token_hash_unique" on "sign_in_challenges" ("token_hash") where "token_hash" is not null;`);
    this.addSql(`create unique index "sign_in_challenges_open_unique" on "sign_in_challenges" ("email", "kind") where "closed_at" is null;`);
    this.addSql(`create index "sign_in_challenges_expires_at_index" on "sign_in_challenges" ("expires_at");`);

    // A session is one sign-in; its refresh tokens are one family.
    this.addSql(`create table "sessions" ("id" varchar(40) not null, "account_id" varchar(40) not null, "method" varchar(40) not null, "user_agent" varchar(300) null, "ip" varchar(64) null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, "revoked_at" timestamptz null, constraint "sessions_pkey" primary key ("id"), constraint "sessions_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade);`);
    this.addSql(`create index "sessions_account_id_index" on "sessions" ("account_id");`);
    this.addSql(`create index "sessions_expires_at_index" on "sessions" ("expires_at");`);
    this.addSql(`create table "refresh_tokens" ("id" varchar(40) not null, "session_id" varchar(40) not null, "account_id" varchar(40) not null, "token_hash" char(64) not null, "used_at" timestamptz null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), constraint "refresh_tokens_pkey" primary key ("id"), constraint "refresh_tokens_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on update cascade on delete cascade, constraint "refresh_tokens_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade);`);
    this.addSql(`create unique index "refresh_tokens_token_hash_unique" on "refresh_tokens" ("token_hash");`);
    this.addSql(`create index "refresh_tokens_session_id_index" on "refresh_tokens" ("session_id");`);
    this.addSql(`create index "refresh_tokens_expires_at_index" on "refresh_tokens" ("expires_at");`);

    // OAuth: identities linked to accounts; the state of a redirect in flight; the one-time code of a finished one.
    this.addSql(`create table "oauth_identities" ("provider" varchar(20) not null, "subject" varchar(255) not null, "account_id" varchar(40) not null, "email" varchar(320) null, "created_at" timestamptz not null default now(), constraint "oauth_identities_pkey" primary key ("provider", "subject"), constraint "oauth_identities_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade);`);
    this.addSql(`create index "oauth_identities_account_id_index" on "oauth_identities" ("account_id");`);
    this.addSql(`create table "oauth_states" ("state_hash" char(64) not null, "provider" varchar(20) not null, "code_verifier" varchar(200) not null, "nonce" varchar(200) not null, "expires_at" timestamptz not null, constraint "oauth_states_pkey" primary key ("state_hash"));`);
    this.addSql(`create index "oauth_states_expires_at_index" on "oauth_states" ("expires_at");`);
    this.addSql(`create table "oauth_codes" ("code_hash" char(64) not null, "provider" varchar(20) not null, "subject" varchar(255) not null, "email" varchar(320) null, "email_verified" boolean not null default false, "full_name" varchar(200) null, "expires_at" timestamptz not null, "used_at" timestamptz null, constraint "oauth_codes_pkey" primary key ("code_hash"));`);
    this.addSql(`create index "oauth_codes_expires_at_index" on "oauth_codes" ("expires_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "oauth_codes";`);
    this.addSql(`drop table if exists "oauth_states";`);
    this.addSql(`drop table if exists "oauth_identities";`);
    this.addSql(`drop table if exists "refresh_tokens";`);
    this.addSql(`drop table if exists "sessions";`);
    this.addSql(`drop table if exists "sign_in_challenges";`);
    this.addSql(`drop index if exists "accounts_deleted_at_index";`);
    this.addSql(`alter table "accounts" drop column "is_staff", drop column "password_hash", drop column "deleted_at";`);
  }
}
