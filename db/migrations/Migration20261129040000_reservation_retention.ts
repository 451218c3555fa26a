import { Migration } from '@mikro-orm/migrations';

/**
 * The index the sweep prunes closed credit reservations by (services/credits.ts
 * pruneClosedReservations): settled and released rows by the time they were closed.
 */
export class Migration20261129040000_reservation_retention extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "credit_reservations_closed_at_index" on "credit_reservations" ("closed_at") where "state" <> 'held';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "credit_reservations_closed_at_index";`);
  }
}
