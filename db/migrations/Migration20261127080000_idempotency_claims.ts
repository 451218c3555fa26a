import { Migration } from '@mikro-orm/migrations';

/**
 * `idempotency_records.claim_id`: which call holds a key. A call whose lease ran out while it was
 * still running (a stalled process) could have its key taken over by a retry and then still store its
 * own answer and settle its credits over the retry's, so both were charged; and its release of a
 * failed call deleted the retry's claim. Renewal, completion and release now act only on the claim
 * they made (services/idempotency.ts). Records written before carry none and are never renewed,
 * completed or released by a call of this version: a call in progress during the upgrade lets its
 * lease run out and its retry proceed.
 */
export class Migration20261127080000_idempotency_claims extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "idempotency_records" add column "claim_id" varchar(40) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "idempotency_records" drop column "claim_id";`);
  }
}
