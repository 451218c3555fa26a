import { EntitySchema } from '@mikro-orm/core';

export type LedgerKind = 'charge' | 'refund' | 'allowance_reset' | 'purchase' | 'adjustment' | 'reversal';

/**
 * Append-only ledger: every credit movement is one row, written in the same transaction as the
 * account's balances, with the balances after the movement.
 */
export interface CreditLedgerEntry {
  id: string;
  accountId: string;
  workspaceId: string | null;
  kind: LedgerKind;
  operation: string;
  /** Change of the monthly allowance left (negative when drawn). */
  allowanceDelta: number;
  /** Change of the purchased balance (negative when drawn). */
  balanceDelta: number;
  allowanceAfter: number;
  balanceAfter: number;
  /** What caused it: the HTTP request id, a purchase id, or the entry refunded. */
  reference: string;
  createdAt: Date;
}

export const CreditLedgerSchema = new EntitySchema<CreditLedgerEntry>({
  name: 'CreditLedgerEntry',
  tableName: 'credit_ledger',
  indexes: [{ properties: ['accountId', 'createdAt'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    accountId: { type: 'string', length: 40 },
    workspaceId: { type: 'string', length: 40, nullable: true },
    kind: { type: 'string', length: 20 },
    operation: { type: 'string', length: 40 },
    allowanceDelta: { type: 'integer' },
    balanceDelta: { type: 'integer' },
    allowanceAfter: { type: 'integer' },
    balanceAfter: { type: 'integer' },
    reference: { type: 'string', length: 80 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});
