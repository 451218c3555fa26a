import { Migration } from '@mikro-orm/migrations';

/**
 * The API key that made the rotation creating a key (null: a web session, or before this column): an
 * administration key rotates its own twin only when it made that rotation (services/api-keys.ts rotateKey).
 */
export class Migration20261129190000_key_rotated_by extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "api_keys" add column "rotated_by_key_id" varchar(40) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "api_keys" drop column if exists "rotated_by_key_id";`);
  }
}
