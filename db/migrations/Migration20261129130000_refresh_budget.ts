import { Migration } from '@mikro-orm/migrations';

/**
 * A model's versions made by refreshes, newest first, for the refresh budget (services/training.ts
 * refreshBudgetWait): a model keeps every version for good, so the fold reads the last day's only.
 */
export class Migration20261129130000_refresh_budget extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "model_versions_refreshes_index" on "model_versions" ("model_id", "created_at") where "trigger" = 'refresh';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "model_versions_refreshes_index";`);
  }
}
