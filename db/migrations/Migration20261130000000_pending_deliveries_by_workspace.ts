import { Migration } from '@mikro-orm/migrations';

/**
 * The deliveries still pending in an account's workspaces, counted when a test event or a redelivery
 * is asked for (services/webhooks/endpoints.ts): a partial index, small as the pending rows are few.
 */
export class Migration20261130000000_pending_deliveries_by_workspace extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index if not exists "webhook_deliveries_pending_workspace_index" on "webhook_deliveries" ("workspace_id") where "state" = 'pending';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "webhook_deliveries_pending_workspace_index";`);
  }
}
