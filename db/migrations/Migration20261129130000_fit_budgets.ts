import { Migration } from '@mikro-orm/migrations';

/**
 * A model's versions made by refreshes, newest first, and an account's models by creation, for the fit
 * budgets (services/fit-budgets.ts, counted in the fold and at a model's creation): both are kept for
 * good, so the checks read the last day's only.
 */
export class Migration20261129130000_fit_budgets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "model_versions_refreshes_index" on "model_versions" ("model_id", "created_at") where "trigger" = 'refresh';`);
    this.addSql(`create index "models_account_id_created_at_index" on "models" ("account_id", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "models_account_id_created_at_index";`);
    this.addSql(`drop index if exists "model_versions_refreshes_index";`);
  }
}
