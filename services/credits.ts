import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, CreditLedgerSchema, type Account } from '../db/entities';
import { AppError } from './errors';
import { newId } from './ids';

export const currentPeriod = (now: Date): string => now.toISOString().slice(0, 7);

export interface Charge {
  ledgerId: string;
  accountId: string;
  fromAllowance: number;
  fromBalance: number;
  /** Allowance left + purchased balance after the charge. */
  remaining: number;
}

export const remainingOf = (account: Pick<Account, 'allowanceRemaining' | 'purchasedBalance'>): number =>
  account.allowanceRemaining + account.purchasedBalance;

/**
 * Locks the account row and starts a new allowance period if the month changed (with its ledger row).
 * Every credit movement goes through here first, so the reset happens exactly once per month.
 */
async function lockAccount(tx: EntityManager, accountId: string, now: Date): Promise<Account> {
  const account = await tx.findOneOrFail(AccountSchema, { id: accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  const period = currentPeriod(now);
  if (account.allowancePeriod !== period) {
    const delta = account.monthlyAllowance - account.allowanceRemaining;
    account.allowanceRemaining = account.monthlyAllowance;
    account.allowancePeriod = period;
    tx.create(CreditLedgerSchema, {
      id: newId('event'),
      accountId,
      workspaceId: null,
      kind: 'allowance_reset',
      operation: 'monthly_allowance',
      allowanceDelta: delta,
      balanceDelta: 0,
      allowanceAfter: account.allowanceRemaining,
      balanceAfter: account.purchasedBalance,
      reference: period,
      createdAt: now,
    });
    await tx.flush();
  }
  return account;
}

/** What an account has left now (allowance of the current month + purchased balance). */
export async function creditsRemaining(em: EntityManager, accountId: string): Promise<number> {
  return em.transactional(async (tx) => remainingOf(await lockAccount(tx, accountId, new Date())));
}

interface ChargeRow {
  allowance_delta: number;
  balance_delta: number;
  allowance_after: number;
  balance_after: number;
}

/**
 * The whole reservation in one statement: lock the account row if it can pay, draw the allowance
 * first and the purchased balance after, and append the ledger row. Concurrent statements queue on
 * the row lock and re-check the balance they find, so they can never overdraw.
 */
const CHARGE_SQL = `
with old as (
  select id, allowance_remaining as a0, purchased_balance as b0
    from accounts
   where id = ? and allowance_period = ? and allowance_remaining + purchased_balance >= ?
   for update
), upd as (
  update accounts a
     set allowance_remaining = old.a0 - least(old.a0, ?),
         purchased_balance = old.b0 - (? - least(old.a0, ?))
    from old
   where a.id = old.id
  returning a.id, old.a0, old.b0, a.allowance_remaining as a1, a.purchased_balance as b1
)
insert into credit_ledger (id, account_id, workspace_id, kind, operation, allowance_delta, balance_delta, allowance_after, balance_after, reference, created_at)
select ?, upd.id, ?, 'charge', ?, upd.a1 - upd.a0, upd.b1 - upd.b0, upd.a1, upd.b1, ?, now() from upd
returning allowance_delta, balance_delta, allowance_after, balance_after`;

/**
 * Reserves `amount` credits before any computation. Without enough credits nothing is written and
 * 402 CREDITS_EXHAUSTED carries the balance and the required amount.
 */
export async function reserveCredits(
  em: EntityManager,
  input: { accountId: string; workspaceId: string; amount: number; operation: string; reference: string },
): Promise<Charge> {
  if (!Number.isInteger(input.amount) || input.amount < 0) throw new Error(`invalid credit amount ${input.amount}`);
  const ledgerId = newId('event');
  const attempt = async (): Promise<ChargeRow | undefined> => {
    const rows = await em
      .getConnection()
      .execute<ChargeRow[]>(CHARGE_SQL, [
        input.accountId,
        currentPeriod(new Date()),
        input.amount,
        input.amount,
        input.amount,
        input.amount,
        ledgerId,
        input.workspaceId,
        input.operation,
        input.reference,
      ]);
    return rows[0];
  };
  let charged = await attempt();
  if (!charged) {
    // Either a new month has not been opened yet, or the credits do not suffice.
    const remaining = await creditsRemaining(em, input.accountId);
    if (remaining >= input.amount) charged = await attempt();
    if (!charged) {
      const account = await em.fork().findOneOrFail(AccountSchema, { id: input.accountId });
      const available = remainingOf(account);
      throw new AppError(
        'CREDITS_EXHAUSTED',
        402,
        `This call needs ${input.amount} credits and ${available} remain (monthly allowance first, then purchased credits).`,
        { balance: available, required: input.amount, allowance_remaining: account.allowanceRemaining, purchased_balance: account.purchasedBalance },
      );
    }
  }
  return {
    ledgerId,
    accountId: input.accountId,
    fromAllowance: -charged.allowance_delta,
    fromBalance: -charged.balance_delta,
    remaining: charged.allowance_after + charged.balance_after,
  };
}

/**
 * Gives back a reservation whose computation failed, to where it was drawn from (an allowance drawn
 * in an earlier month is not restored into the new month's allowance: it goes to nobody, as a reset
 * would have cleared it anyway). Idempotent: a charge is refunded at most once.
 */
export async function refundCredits(em: EntityManager, charge: Charge, operation: string): Promise<number> {
  return em.transactional(async (tx) => {
    const now = new Date();
    const already = await tx.count(CreditLedgerSchema, { kind: 'refund', reference: charge.ledgerId });
    const account = await lockAccount(tx, charge.accountId, now);
    if (already > 0) return remainingOf(account);
    const original = await tx.findOneOrFail(CreditLedgerSchema, { id: charge.ledgerId });
    const samePeriod = currentPeriod(original.createdAt) === account.allowancePeriod;
    const allowanceBack = samePeriod ? charge.fromAllowance : 0;
    account.allowanceRemaining += allowanceBack;
    account.purchasedBalance += charge.fromBalance;
    tx.create(CreditLedgerSchema, {
      id: newId('event'),
      accountId: charge.accountId,
      workspaceId: original.workspaceId,
      kind: 'refund',
      operation,
      allowanceDelta: allowanceBack,
      balanceDelta: charge.fromBalance,
      allowanceAfter: account.allowanceRemaining,
      balanceAfter: account.purchasedBalance,
      reference: charge.ledgerId,
      createdAt: now,
    });
    await tx.flush();
    return remainingOf(account);
  });
}
