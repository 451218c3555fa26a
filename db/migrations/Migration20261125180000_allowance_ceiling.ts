import { Migration } from '@mikro-orm/migrations';

/**
 * `accounts.allowance_ceiling`: the largest monthly allowance granted in the account's current
 * allowance period. A plan upgrade raised what was left by the difference of the two allowances and a
 * downgrade kept it, so moving down and up again within a month granted the upgrade once per round trip
 * (a probe took a pro account from 200,000 to 560,000 credits in two round trips); an upgrade now adds
 * only what it brings above the ceiling (services/billing.ts, movePlan). Existing accounts start at
 * their current allowance.
 *
 * `rate_limits.key` becomes text: the sign-in budgets are keyed by the address (up to 320 characters
 * with the step's prefix), which a varchar(255) refused with a server error.
 */
export class Migration20261125180000_allowance_ceiling extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "allowance_ceiling" int not null default 0;`);
    this.addSql(`update "accounts" set "allowance_ceiling" = "monthly_allowance";`);
    this.addSql(`alter table "rate_limits" alter column "key" type text;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "rate_limits" alter column "key" type varchar(255);`);
    this.addSql(`alter table "accounts" drop column "allowance_ceiling";`);
  }
}
