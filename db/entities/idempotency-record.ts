import { EntitySchema } from '@mikro-orm/core';

/** A call made with an Idempotency-Key, kept 24 h per workspace so that a retry replays its answer. */
export interface IdempotencyRecord {
  workspaceId: string;
  key: string;
  requestHash: string;
  state: 'in_progress' | 'completed';
  responseStatus: number | null;
  responseBody: string | null;
  responseHeaders: Record<string, string> | null;
  createdAt: Date;
  expiresAt: Date;
  /** Until when a call in progress holds the key; a call that died stops renewing it. */
  leaseUntil: Date;
  /** The call holding the key: only it renews, completes or releases the record. */
  claimId: string | null;
}

export const IdempotencyRecordSchema = new EntitySchema<IdempotencyRecord>({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  properties: {
    workspaceId: { type: 'string', length: 40, primary: true },
    key: { type: 'string', length: 255, primary: true },
    requestHash: { type: 'string', length: 64 },
    state: { type: 'string', length: 20 },
    responseStatus: { type: 'integer', nullable: true },
    responseBody: { type: 'text', nullable: true },
    responseHeaders: { type: 'json', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    expiresAt: { type: 'datetime', index: true },
    leaseUntil: { type: 'datetime', defaultRaw: 'now()' },
    claimId: { type: 'string', length: 40, nullable: true },
  },
});
