import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, CreditLedgerSchema, type Account } from '../db/entities';
import { noteCreditsLeft } from './credit-alerts';
import { AppError } from './errors';
import { newId } from './ids';
import { positional, sql } from './sql';

export const currentPeriod = (now: Date): string => now.toISOString().slice(0, 7);


export const remainingOf = (account: Pick<Account, 'allowanceRemaining' | 'purchasedBalance'>): number =>
  account.allowanceRemaining + account.purchasedBalance;

/**
 * Locks the account row and starts a new allowance period if the month changed (with its ledger row).
 * Every credit movement goes through here first, so the reset happens exactly once per month. Periods
 * only move forward: a process whose clock is behind (or the Schedule's run, dated by Temporal) never
 * reopens a month already past.
 */
export async function lockAccount(tx: EntityManager, accountId: string, now: Date, period: string = currentPeriod(now)): Promise<Account> {
  const account = await tx.findOneOrFail(AccountSchema, { id: accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (account.allowancePeriod < period) {
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

/**
 * Opens `period` (`YYYY-MM`) for every account still in an earlier one, each with its ledger row (the
 * monthly Schedule; the lazy reset in lockAccount covers a Schedule that has not run yet). Running it
 * again for the same period changes nothing.
 */
export async function resetAllowances(em: EntityManager, period: string, now: Date, accountIds?: string[]): Promise<number> {
  if (accountIds?.length === 0) return 0;
  let reset = 0;
  for (;;) {
    const stale = await em
      .getConnection()
      .execute<Array<{ id: string }>>(
        accountIds
          ? `select id from accounts where allowance_period < ? and id in (?) order by id limit 500`
          : `select id from accounts where allowance_period < ? order by id limit 500`,
        accountIds ? [period, accountIds] : [period],
      );
    if (stale.length === 0) return reset;
    for (const { id } of stale) {
      const opened = await em.fork().transactional(async (tx) => (await lockAccount(tx, id, now, period)).allowancePeriod === period);
      if (opened) reset += 1;
    }
  }
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
 * first and the purchased balance after, append the ledger row and the reservation row that holds
 * the credits until the call's answer is stored. Concurrent statements queue on the row lock and
 * re-check the balance they find, so they can never overdraw.
 */
const RESERVE_SQL = positional(`
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
  returning a.id, old.a0, old.b0, a.allowance_remaining as a1, a.purchased_balance as b1, a.allowance_period as period
), led as (
  insert into credit_ledger (id, account_id, workspace_id, kind, operation, allowance_delta, balance_delta, allowance_after, balance_after, reference, created_at)
  select ?, upd.id, ?, 'charge', ?, upd.a1 - upd.a0, upd.b1 - upd.b0, upd.a1, upd.b1, ?, now() from upd
  returning id, allowance_delta, balance_delta, allowance_after, balance_after
), held as (
  insert into credit_reservations (id, account_id, workspace_id, operation, reference, from_allowance, from_balance, period, state, deadline, created_at)
  select led.id, upd.id, ?, ?, ?, -led.allowance_delta, -led.balance_delta, upd.period, 'held', now() + make_interval(secs => ?), now()
    from led, upd
)
select allowance_delta, balance_delta, allowance_after, balance_after from led`);

/** Credits held for one paid call, from before its computation until its answer is stored. */
export interface Reservation {
  /** Also the id of the charge's ledger row. */
  id: string;
  accountId: string;
  amount: number;
  /** Allowance left + purchased balance after the reservation. */
  remaining: number;
}

/**
 * Reserves `amount` credits before any computation. Without enough credits nothing is written and
 * 402 CREDITS_EXHAUSTED carries the balance and the required amount. The reservation must be settled
 * (the answer is stored) or released (the call failed) before `holdSeconds`; past that the sweep
 * releases it, so a process that dies mid-call never keeps the credits.
 */
export async function reserveCredits(
  em: EntityManager,
  input: { accountId: string; workspaceId: string; amount: number; operation: string; reference: string; holdSeconds: number },
): Promise<Reservation> {
  if (!Number.isInteger(input.amount) || input.amount <= 0) throw new Error(`invalid credit amount ${input.amount}`);
  const id = newId('event');
  const attempt = async (): Promise<ChargeRow | undefined> => {
    const rows = await sql<ChargeRow>(em, RESERVE_SQL, [
        input.accountId,
        currentPeriod(new Date()),
        input.amount,
        input.amount,
        input.amount,
        input.amount,
        id,
        input.workspaceId,
        input.operation,
        input.reference,
        input.workspaceId,
        input.operation,
        input.reference,
        input.holdSeconds,
      ]);
    return rows[0];
  };
  let charged = await attempt();
  if (!charged) {
    // Either a new month has not been opened yet, or the credits do not suffice.
    const remaining = await creditsRemaining(em.fork(), input.accountId);
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
  const remaining = charged.allowance_after + charged.balance_after;
  await noteCreditsLeft(em, input.accountId, remaining);
  return { id, accountId: input.accountId, amount: input.amount, remaining };
}

/** A call whose answer came after its reservation's deadline: the sweep gave the credits back. */
export const callExpired = (): AppError =>
  new AppError('CALL_EXPIRED', 503, 'The call took longer than its credits could be held and nothing was charged; retry it.');

/**
 * Settles a reservation once its call's answer is stored: the credits are spent for good. False when
 * it is no longer held (the sweep released it after its deadline): the answer must then not be sent.
 */
export async function settleReservation(em: EntityManager, reservationId: string): Promise<boolean> {
  const rows = await em
    .getConnection()
    .execute<Array<{ id: string }>>(
      `update credit_reservations set state = 'settled', closed_at = now() where id = ? and state = 'held' returning id`,
      [reservationId],
      'all',
      em.getTransactionContext(),
    );
  return rows.length === 1;
}

/**
 * Gives a held reservation back, in one statement, to where it was drawn from (an allowance drawn in
 * an earlier month is not restored into the new month's: a reset would have cleared it anyway), with
 * its refund row in the ledger. A reservation is released at most once: the state change is
 * conditional and the ledger accepts one refund per charge.
 */
const RELEASE_SQL = `
with r as (
  update credit_reservations set state = 'released', closed_at = now()
   where id = ? and state = 'held'
  returning id, account_id, workspace_id, operation, from_allowance, from_balance, period
), acc as (
  update accounts a
     set allowance_remaining = a.allowance_remaining + (case when a.allowance_period = r.period then r.from_allowance else 0 end),
         purchased_balance = a.purchased_balance + r.from_balance
    from r
   where a.id = r.account_id
  returning a.id, a.allowance_remaining, a.purchased_balance, r.id as charge_id, r.workspace_id, r.operation, r.from_balance,
            (case when a.allowance_period = r.period then r.from_allowance else 0 end) as allowance_back
)
insert into credit_ledger (id, account_id, workspace_id, kind, operation, allowance_delta, balance_delta, allowance_after, balance_after, reference, created_at)
select ?, acc.id, acc.workspace_id, 'refund', acc.operation, acc.allowance_back, acc.from_balance, acc.allowance_remaining, acc.purchased_balance, acc.charge_id, now() from acc
returning allowance_after + balance_after as remaining`;

/** Releases a held reservation; returns the credits left after it, or null when it was not held. */
export async function releaseReservation(em: EntityManager, reservationId: string): Promise<number | null> {
  const rows = await em.getConnection().execute<Array<{ remaining: number }>>(RELEASE_SQL, [reservationId, newId('event')], 'all', em.getTransactionContext());
  return rows[0]?.remaining ?? null;
}

/** The sweep: releases every reservation still held past its deadline (its call died or hung). */
export async function releaseLapsedReservations(em: EntityManager, now: Date): Promise<number> {
  const lapsed = await em
    .getConnection()
    .execute<Array<{ id: string }>>(`select id from credit_reservations where state = 'held' and deadline < ? order by deadline limit 1000`, [now]);
  let released = 0;
  for (const { id } of lapsed) if ((await releaseReservation(em, id)) !== null) released += 1;
  return released;
}
