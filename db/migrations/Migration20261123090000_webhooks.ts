import { Migration } from '@mikro-orm/migrations';

/**
 * Outgoing webhooks: endpoints, the event outbox, deliveries with every attempt, and the records that
 * make `credits.low` once per period per threshold and `model.stale` once per episode.
 */
export class Migration20261123090000_webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "webhook_endpoints" ("id" varchar(40) not null, "workspace_id" varchar(40) not null, "url" varchar(2048) not null, "events" jsonb null, "active" boolean not null default true, "secret_ciphertext" text not null, "previous_secret_ciphertext" text null, "previous_secret_expires_at" timestamptz null, "last_success_at" timestamptz null, "failing_since" timestamptz null, "disabled_reason" varchar(300) null, "disabled_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), constraint "webhook_endpoints_pkey" primary key ("id"));`);
    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`);
    // One URL once per workspace (WEBHOOK_URL_EXISTS); URLs are stored normalised by the service.
    this.addSql(`create unique index "webhook_endpoints_workspace_url_unique" on "webhook_endpoints" ("workspace_id", "url");`);

    // The outbox: written in the transaction of the change that causes the event. The dedupe key
    // names that change, so one change can never make two events. The payload is json, not jsonb, so
    // that it is sent with its keys in the documented order.
    this.addSql(`create table "webhook_events" ("id" varchar(40) not null, "workspace_id" varchar(40) not null, "type" varchar(40) not null, "payload" json not null, "dedupe_key" varchar(200) null, "created_at" timestamptz not null default now(), constraint "webhook_events_pkey" primary key ("id"));`);
    this.addSql(`alter table "webhook_events" add constraint "webhook_events_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`);
    this.addSql(`create unique index "webhook_events_dedupe_key_unique" on "webhook_events" ("dedupe_key");`);
    this.addSql(`create index "webhook_events_workspace_id_created_at_index" on "webhook_events" ("workspace_id", "created_at");`);

    this.addSql(`create table "webhook_deliveries" ("id" varchar(40) not null, "event_id" varchar(40) not null, "endpoint_id" varchar(40) not null, "workspace_id" varchar(40) not null, "redelivery_of" varchar(40) null, "state" varchar(20) not null default 'pending', "attempts" int not null default 0, "last_status" int null, "last_error" varchar(500) null, "dispatched_at" timestamptz null, "dispatch_claimed_until" timestamptz null, "created_at" timestamptz not null default now(), "completed_at" timestamptz null, constraint "webhook_deliveries_pkey" primary key ("id"), constraint "webhook_deliveries_state_check" check ("state" in ('pending', 'succeeded', 'failed', 'cancelled')));`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_foreign" foreign key ("event_id") references "webhook_events" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoints" ("id") on update cascade on delete cascade;`);
    // One first delivery per event and endpoint; redeliveries are extra rows pointing at it.
    this.addSql(`create unique index "webhook_deliveries_event_endpoint_unique" on "webhook_deliveries" ("event_id", "endpoint_id") where "redelivery_of" is null;`);
    this.addSql(`create index "webhook_deliveries_endpoint_id_created_at_index" on "webhook_deliveries" ("endpoint_id", "created_at");`);
    // What the relay reads every second: small, since a delivery leaves it once its workflow starts.
    this.addSql(`create index "webhook_deliveries_undispatched_index" on "webhook_deliveries" ("created_at") where "dispatched_at" is null;`);

    this.addSql(`create table "webhook_attempts" ("delivery_id" varchar(40) not null, "number" int not null, "scheduled_at" timestamptz not null, "started_at" timestamptz not null, "duration_ms" int not null, "status" int null, "response_excerpt" text null, "error" varchar(500) null, "outcome" varchar(20) not null, constraint "webhook_attempts_pkey" primary key ("delivery_id", "number"), constraint "webhook_attempts_outcome_check" check ("outcome" in ('succeeded', 'retry', 'failed')));`);
    this.addSql(`alter table "webhook_attempts" add constraint "webhook_attempts_delivery_id_foreign" foreign key ("delivery_id") references "webhook_deliveries" ("id") on update cascade on delete cascade;`);

    // credits.low: one row per account, allowance period and threshold crossed.
    this.addSql(`create table "credit_alerts" ("account_id" varchar(40) not null, "period" varchar(7) not null, "threshold" varchar(10) not null, "remaining" int not null, "created_at" timestamptz not null default now(), constraint "credit_alerts_pkey" primary key ("account_id", "period", "threshold"));`);
    this.addSql(`alter table "credit_alerts" add constraint "credit_alerts_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`);

    // model.stale: an episode opens when a model goes stale and closes when it recovers.
    this.addSql(`create table "model_stale_episodes" ("id" varchar(40) not null, "model_id" varchar(40) not null, "reason" varchar(20) not null, "started_at" timestamptz not null default now(), "ended_at" timestamptz null, constraint "model_stale_episodes_pkey" primary key ("id"));`);
    this.addSql(`alter table "model_stale_episodes" add constraint "model_stale_episodes_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`);
    this.addSql(`create unique index "model_stale_episodes_open_unique" on "model_stale_episodes" ("model_id") where "ended_at" is null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "model_stale_episodes" cascade;`);
    this.addSql(`drop table if exists "credit_alerts" cascade;`);
    this.addSql(`drop table if exists "webhook_attempts" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_events" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }
}
