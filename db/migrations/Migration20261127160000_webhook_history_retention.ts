import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for pruning the webhook history past its retention (services/webhooks/events.ts
 * pruneWebhookHistory, run by the sweep): deliveries and events by creation time, and deliveries by
 * event, which the "no delivery refers to it" test and the cascade from a deleted event both read
 * (the unique index on event and endpoint covers first deliveries only, not redeliveries).
 */
export class Migration20261127160000_webhook_history_retention extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "webhook_deliveries_created_at_index" on "webhook_deliveries" ("created_at");`);
    this.addSql(`create index "webhook_deliveries_event_id_index" on "webhook_deliveries" ("event_id");`);
    this.addSql(`create index "webhook_events_created_at_index" on "webhook_events" ("created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "webhook_events_created_at_index";`);
    this.addSql(`drop index if exists "webhook_deliveries_event_id_index";`);
    this.addSql(`drop index if exists "webhook_deliveries_created_at_index";`);
  }
}
