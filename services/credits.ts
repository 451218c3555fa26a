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

/**
 * Reserves `amount` credits before any computation: the allowance first, then the purchased balance.
 * The account row is locked for the transaction, so concurrent requests are serialised and can never
 * overdraw; without enough credits nothing is written and 402 CREDITS_EXHAUSTED carries the balance and
 * the required amount.
 */
export async function reserveCredits(
  em: EntityManager,
  input: { accountId: string; workspaceId: string; amount: number; operation: string; reference: string },
): Promise<Charge> {
  if (!Number.isInteger(input.amount) || input.amount < 0) throw new Error(`invalid credit amount ${input.amount}`);
  return em.transactional(async (tx) => {
    const now = new Date();
    const account = await lockAccount(tx, input.accountId, now);
    const available = remainingOf(account);
    if (available < input.amount) {
      throw new AppError(
        'CREDITS_EXHAUSTED',
        402,
        `This call needs ${input.amount} credits and ${available} remain (monthly allowance first, then purchased credits).`,
        { balance: available, required: input.amount, allowance_remaining: account.allowanceRemaining, purchased_balance: account.purchasedBalance },
      );
    }
    const fromAllowance = Math.min(account.allowanceRemaining, input.amount);
    const fromBalance = input.amount - fromAllowance;
    account.allowanceRemaining -= fromAllowance;
    account.purchasedBalance -= fromBalance;
    const ledgerId = newId('event');
    tx.create(CreditLedgerSchema, {
      id: ledgerId,
      accountId: input.accountId,
      workspaceId: input.workspaceId,
      kind: 'charge',
      operation: input.operation,
      allowanceDelta: -fromAllowance,
      balanceDelta: -fromBalance,
      allowanceAfter: account.allowanceRemaining,
      balanceAfter: account.purchasedBalance,
      reference: input.reference,
      createdAt: now,
    });
    await tx.flush();
    return { ledgerId, accountId: input.accountId, fromAllowance, fromBalance, remaining: remainingOf(account) };
  });
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
