import { Migration } from '@mikro-orm/migrations';

/**
 * The last failed attempt of an endpoint, so that the 5-day disable clock restarts after a quiet spell
 * (services/webhooks/delivery.ts). Endpoints failing now take it from their attempts.
 */
export class Migration20261129170000_webhook_failure_gap extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "webhook_endpoints" add column "last_failure_at" timestamptz null;`);
    this.addSql(
      `update "webhook_endpoints" e set "last_failure_at" = (
         select max(a."scheduled_at") from "webhook_attempts" a join "webhook_deliveries" d on d."id" = a."delivery_id"
          where d."endpoint_id" = e."id" and a."outcome" <> 'succeeded')
        where e."failing_since" is not null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_endpoints" drop column if exists "last_failure_at";`);
  }
}
