import type { EntityManager } from '@mikro-orm/postgresql';
import { FIT_BUDGET_WINDOW_MS } from '../config/plans';
import { AppError } from './errors';

/**
 * When one more fit fits the budget: null while fewer than `limit` of the rows `countedSql` selects
 * (its `created_at`, newest first, `?` for the window's start then `params`) were made within
 * FIT_BUDGET_WINDOW_MS before `now`, else the moment the oldest of the newest `limit` leaves the
 * window. Counted on the rows themselves (versions, models), so nothing else must be kept in step.
 */
export async function fitBudgetFreesAt(tx: EntityManager, countedSql: string, params: unknown[], limit: number, now: Date): Promise<Date | null> {
  const [oldestCounted] = await tx.getConnection().execute<Array<{ created_at: Date }>>(
    `${countedSql} order by created_at desc offset ? limit 1`,
    [new Date(now.getTime() - FIT_BUDGET_WINDOW_MS), ...params, limit - 1],
    'all',
    tx.getTransactionContext(),
  );
  return oldestCounted ? new Date(new Date(oldestCounted.created_at).getTime() + FIT_BUDGET_WINDOW_MS) : null;
}

/** 429 RATE_LIMITED for a spent fit budget: `reason` says whose, Retry-After the seconds until `until`. */
export function fitBudgetSpent(reason: string, limit: number, until: Date, now = new Date()): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new AppError('RATE_LIMITED', 429, `${reason} Retry in ${seconds} s.`, { retry_after_seconds: seconds, limit });
}
