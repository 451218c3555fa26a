import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountSchema, CreditLedgerSchema, type Account } from '../db/entities';
import { LRUCache } from 'lru-cache';
import { noteCreditsLeft } from './credit-alerts';
import { AppError } from './errors';
import { newId } from './ids';
import { sql, SqlParams, type Queryable } from './sql';

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
    account.allowanceCeiling = account.monthlyAllowance;
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

/**
 * Where a paid call's statements run: its hot statements on the call pool (db/call-pool.ts), the
 * rare ones (a month to open, a refusal to explain, a credit alert) through the ORM.
 */
export interface CallStores {
  em: EntityManager;
  callPool: Queryable;
}

/**
 * A paid call's stores, its entity manager forked on first use: most calls run only call-pool
 * statements, and a fork (a unit of work and its maps) on every call is a measurable share of a
 * one-row call's CPU.
 */
export function callStores(orm: { em: EntityManager }, callPool: Queryable): CallStores {
  let em: EntityManager | null = null;
  return {
    get em() {
      em ??= orm.em.fork();
      return em;
    },
    callPool,
  };
}

/** What one paid call is charged, and for what. */
export interface ChargeSpec {
  accountId: string;
  workspaceId: string;
  amount: number;
  operation: string;
  reference: string;
  holdSeconds: number;
  /** Charge only while this model still serves this version (its details were read from a cache). */
  model?: { id: string; version: number };
  /**
   * `held`: a reservation, before the computation, settled when the answer is stored or given back.
   * `settled`: charged in the statement that stores the answer (the `answer` CTE): both or neither.
   */
  state: 'held' | 'settled';
}

/**
 * The charge as CTEs of one statement: `current` (the model guard, when given), then lock the account
 * row if it can pay, draw the allowance first and the purchased balance after, append the ledger row
 * (`led`) and the reservation row. Concurrent statements queue on the row lock and re-check the
 * balance they find, so they can never overdraw. The account's month is this process's or a later
 * one: at a month's start a process whose clock is a little behind (or the Schedule, dated by
 * Temporal) may have opened the new month already, and its allowance is the one to draw (a twelfth
 * probe: such a charge answered 402 "needs 1 credits and 80999 remain").
 */
function chargeCtes(p: SqlParams, id: string, spec: ChargeSpec): string {
  const amount = p.add(spec.amount);
  const guard = spec.model
    ? `select 1 from models where id = ${p.add(spec.model.id)} and workspace_id = ${p.add(spec.workspaceId)} and status = 'serving' and current_version = ${p.add(spec.model.version)}`
    : 'select 1';
  const settledAt = spec.state === 'settled' ? 'now()' : 'null';
  return `current as (${guard}), old as (
  select id, allowance_remaining as a0, purchased_balance as b0
    from accounts
   where id = ${p.add(spec.accountId)} and allowance_period >= ${p.add(currentPeriod(new Date()))} and allowance_remaining::bigint + purchased_balance >= ${amount}
     and exists (select 1 from current)
   for update
), upd as (
  update accounts a
     set allowance_remaining = old.a0 - least(old.a0, ${amount}),
         purchased_balance = old.b0 - (${amount} - least(old.a0, ${amount}))
    from old
   where a.id = old.id
  returning a.id, old.a0, old.b0, a.allowance_remaining as a1, a.purchased_balance as b1, a.allowance_period as period
), led as (
  insert into credit_ledger (id, account_id, workspace_id, kind, operation, allowance_delta, balance_delta, allowance_after, balance_after, reference, created_at)
  select ${p.add(id)}, upd.id, ${p.add(spec.workspaceId)}, 'charge', ${p.add(spec.operation)}, upd.a1 - upd.a0, upd.b1 - upd.b0, upd.a1, upd.b1, ${p.add(spec.reference)}, now() from upd
  returning id, allowance_delta, balance_delta, allowance_after, balance_after
), reservation as (
  insert into credit_reservations (id, account_id, workspace_id, operation, reference, from_allowance, from_balance, period, state, deadline, created_at, closed_at)
  select led.id, upd.id, ${p.add(spec.workspaceId)}, ${p.add(spec.operation)}, ${p.add(spec.reference)}, -led.allowance_delta, -led.balance_delta,
         upd.period, '${spec.state}', now() + make_interval(secs => ${p.add(spec.holdSeconds)}), now(), ${settledAt}
    from led, upd
)`;
}

interface ChargeRow {
  model_current: boolean;
  allowance_after: number | null;
  balance_after: number | null;
}

/** Credits held for one paid call, from before its computation until its answer is stored. */
export interface Reservation {
  /** Also the id of the charge's ledger row. */
  id: string;
  accountId: string;
  amount: number;
  /** Allowance left + purchased balance after the reservation. */
  remaining: number;
}

/** How a charge went: charged, or not at all because the model changed since it was read. */
export type ChargeOutcome = { kind: 'charged'; reservation: Reservation } | { kind: 'model_changed' };

/** Credits each account had left after this process last charged it: who can pay before computing. */
const lastKnownRemaining = new LRUCache<string, number>({ max: 10_000, ttl: 60_000 });

/** Whether this process last saw the account able to pay `amount` (false when it does not know). */
export const knownToAfford = (accountId: string, amount: number): boolean => (lastKnownRemaining.get(accountId) ?? -1) >= amount;

/**
 * Charges one paid call in one statement on the call pool (`answer`: further CTEs of the same
 * statement, written only if the charge is, e.g. the stored rows). Without enough credits nothing is
 * written and 402 CREDITS_EXHAUSTED carries the balance and the required amount. A held reservation
 * must be settled (the answer is stored) or released (the call failed) before `holdSeconds`; past
 * that the sweep releases it, so a process that dies mid-call never keeps the credits.
 */
export async function chargeCall(stores: CallStores, spec: ChargeSpec, answer?: (p: SqlParams) => string): Promise<ChargeOutcome> {
  if (!Number.isInteger(spec.amount) || spec.amount <= 0) throw new Error(`invalid credit amount ${spec.amount}`);
  const { em, callPool } = stores;
  const id = newId('event');
  const attempt = async (): Promise<ChargeRow> => {
    const p = new SqlParams();
    const ctes = chargeCtes(p, id, spec);
    const more = answer ? `, ${answer(p)}` : '';
    const text = `with ${ctes}${more}
select exists (select 1 from current) as model_current, led.allowance_after, led.balance_after from (values (1)) as one left join led on true`;
    const [row] = await sql<ChargeRow>(callPool, text, p.values);
    return row!;
  };
  let charged = await attempt();
  if (!charged.model_current) return { kind: 'model_changed' };
  if (charged.allowance_after === null) {
    // Either a new month has not been opened yet, or the credits do not suffice.
    const remaining = await creditsRemaining(em.fork(), spec.accountId);
    if (remaining >= spec.amount) charged = await attempt();
    if (!charged.model_current) return { kind: 'model_changed' };
    if (charged.allowance_after === null) {
      const account = await em.fork().findOneOrFail(AccountSchema, { id: spec.accountId });
      const available = remainingOf(account);
      lastKnownRemaining.set(spec.accountId, available);
      throw new AppError(
        'CREDITS_EXHAUSTED',
        402,
        `This call needs ${spec.amount} credits and ${available} remain (monthly allowance first, then purchased credits).`,
        { balance: available, required: spec.amount, allowance_remaining: account.allowanceRemaining, purchased_balance: account.purchasedBalance },
      );
    }
  }
  const remaining = charged.allowance_after + (charged.balance_after ?? 0);
  await noteCharged(stores, spec.accountId, remaining);
  return { kind: 'charged', reservation: { id, accountId: spec.accountId, amount: spec.amount, remaining } };
}

/** After any charge: what the account has left, for the next call's choice of path and for its credit alerts. */
export async function noteCharged(stores: Pick<CallStores, 'em'>, accountId: string, remaining: number): Promise<void> {
  lastKnownRemaining.set(accountId, remaining);
  await noteCreditsLeft(() => stores.em, accountId, remaining);
}

/**
 * Reserves `amount` credits before any computation (no model guard): see chargeCall.
 */
export async function reserveCredits(stores: CallStores, input: Omit<ChargeSpec, 'model' | 'state'>): Promise<Reservation> {
  const outcome = await chargeCall(stores, { ...input, state: 'held' });
  if (outcome.kind !== 'charged') throw new Error('a charge without a model guard cannot see its model change');
  return outcome.reservation;
}

/** A call whose answer came after its reservation's deadline: the sweep gave the credits back. */
export const callExpired = (): AppError =>
  new AppError('CALL_EXPIRED', 503, 'The call took longer than its credits could be held and nothing was charged; retry it.');

/** The settlement of a held reservation as SQL (`id`: its placeholder); returns its id only if it was still held. */
export const settleSql = (id: string): string => `update credit_reservations set state = 'settled', closed_at = now() where id = ${id} and state = 'held' returning id`;

const SETTLE_SQL = settleSql('?');

/**
 * Settles a reservation once its call's answer is stored: the credits are spent for good. False when
 * it is no longer held (the sweep released it after its deadline): the answer must then not be sent.
 */
export async function settleReservation(em: EntityManager, reservationId: string): Promise<boolean> {
  const rows = await em.getConnection().execute<Array<{ id: string }>>(SETTLE_SQL, [reservationId], 'all', em.getTransactionContext());
  return rows.length === 1;
}

/** The same, as a statement of its own on the call pool (an answer that is not stored for replay). */
export async function settleReservationAlone(callPool: Queryable, reservationId: string): Promise<boolean> {
  return (await sql(callPool, settleSql('$1'), [reservationId])).length === 1;
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

/** How long a settled or released reservation is kept (the ledger keeps the charge and its refund for good). */
export const CLOSED_RESERVATION_RETENTION_DAYS = 30;
/** Closed reservations removed by one sweep at most: a backlog goes over several runs. */
const RESERVATION_PRUNE_BATCH = 10_000;

/**
 * The sweep: removes reservations closed more than CLOSED_RESERVATION_RETENTION_DAYS ago. Nothing
 * reads a closed one again (settlement and release act on held ones only, and a refund is unique in
 * the ledger by its charge), and every paid call leaves one: they were kept for good.
 */
export async function pruneClosedReservations(em: EntityManager, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - CLOSED_RESERVATION_RETENTION_DAYS * 86_400_000);
  const rows = await em.getConnection().execute<Array<{ n: number }>>(
    `with gone as (delete from credit_reservations where id in (
        select id from credit_reservations where state <> 'held' and closed_at < ? limit ${RESERVATION_PRUNE_BATCH}
      ) returning 1) select count(*)::int as n from gone`,
    [cutoff],
  );
  return rows[0]?.n ?? 0;
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
