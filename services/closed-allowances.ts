/*
 * What a deleted account had left of its month's allowance follows its address into the month's next
 * account. Deleting the account and signing up again with the same address gave a fresh 1,000 free
 * credits each time, about two minutes of sign-in per 1,000 (a twentieth probe). Only a hash of the
 * address is kept, and only until its month ends.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { addressHash } from './address-hash';
import { currentPeriod } from './credits';

/** Records the allowance left by an account being deleted (inside its deletion's transaction). */
export async function recordClosedAllowance(tx: EntityManager, account: { email: string; allowancePeriod: string; allowanceRemaining: number }, now: Date): Promise<void> {
  // An allowance of a past month would be reset anyway at the next charge: nothing to carry.
  if (account.allowancePeriod !== currentPeriod(now)) return;
  await tx.execute(
    `insert into closed_allowances (address_hash, period, allowance_remaining) values (?, ?, ?)
     on conflict (address_hash, period) do update set allowance_remaining = least(closed_allowances.allowance_remaining, excluded.allowance_remaining), closed_at = now()`,
    [addressHash(account.email), account.allowancePeriod, Math.max(0, account.allowanceRemaining)],
  );
}

/** The allowance a new account of `email` starts its month with: its plan's, or less if an account of that address closed with less this month. */
export async function openingAllowance(tx: EntityManager, email: string, planAllowance: number, now: Date): Promise<number> {
  const [closed] = await tx.execute<Array<{ allowance_remaining: number }>>(`select allowance_remaining from closed_allowances where address_hash = ? and period = ?`, [
    addressHash(email),
    currentPeriod(now),
  ]);
  return closed ? Math.min(planAllowance, closed.allowance_remaining) : planAllowance;
}

/** Removes the rows of months before `now`'s (the sweep). */
export async function pruneClosedAllowances(em: EntityManager, now: Date): Promise<number> {
  const rows = await em.getConnection().execute<Array<{ n: number }>>(`with gone as (delete from closed_allowances where period < ? returning 1) select count(*)::int as n from gone`, [currentPeriod(now)]);
  return rows[0]?.n ?? 0;
}
