import type { EntityManager } from '@mikro-orm/postgresql';
import { LRUCache } from 'lru-cache';
import { CREDIT_ALERT_THRESHOLDS, type CreditAlertThreshold } from '../config/webhooks';
import { execIn, recordEvent } from './webhooks/events';

/**
 * `credits.low`: once per allowance period for each threshold crossed downwards (20 % and 5 % of the
 * monthly allowance left, purchased balance included, and 0), to every workspace of the account.
 *
 * The alert is a function of the account's state, recorded with its events in one transaction and
 * keyed by (account, period, threshold): a repeated check adds nothing, and a check lost with a dying
 * process is made by the periodic sweep from the same state. So the charge itself (credits.ts) stays
 * one statement; it only calls `noteCreditsLeft` after it.
 */

/** Monthly allowances recently read, so that a charge well above every threshold costs no query. */
const allowances = new LRUCache<string, number>({ max: 10_000, ttl: 60_000 });

/** The thresholds an account at `remaining` of `allowance` is at or below (integer arithmetic). */
export function crossedThresholds(remaining: number, allowance: number): CreditAlertThreshold[] {
  return CREDIT_ALERT_THRESHOLDS.filter((t) => (t.percent === 0 ? remaining <= 0 : allowance > 0 && remaining * 100 <= allowance * t.percent)).map((t) => t.name);
}

/** Called right after a charge with what the account has left. */
export async function noteCreditsLeft(emOf: () => EntityManager, accountId: string, remaining: number): Promise<void> {
  const allowance = allowances.get(accountId);
  if (allowance !== undefined && crossedThresholds(remaining, allowance).length === 0) return;
  try {
    await checkCreditAlerts(emOf().fork(), accountId);
  } catch {
    // The charge stands whatever happens here: the periodic sweep records, from the same account
    // state, any alert this check could not (the alert is durable there, not here).
  }
}

interface AccountState {
  monthly_allowance: number;
  allowance_remaining: number;
  purchased_balance: number;
  allowance_period: string;
}

/** Records the alerts (and their events) of the thresholds the account is at or below now; returns how many were new. */
export async function checkCreditAlerts(em: EntityManager, accountId: string, now: Date = new Date()): Promise<number> {
  return em.transactional(async (tx) => {
    const [account] = await execIn<AccountState>(
      tx,
      `select monthly_allowance, allowance_remaining, purchased_balance, allowance_period from accounts where id = ?`,
      [accountId],
    );
    if (!account) return 0;
    allowances.set(accountId, account.monthly_allowance);
    // A period not opened yet still shows last month's remainder: nothing crossed this month.
    if (account.allowance_period !== now.toISOString().slice(0, 7)) return 0;
    const remaining = account.allowance_remaining + account.purchased_balance;
    let recorded = 0;
    for (const threshold of crossedThresholds(remaining, account.monthly_allowance)) {
      const fresh = await execIn(
        tx,
        `insert into credit_alerts (account_id, period, threshold, remaining, created_at) values (?, ?, ?, ?, ?) on conflict do nothing returning account_id`,
        [accountId, account.allowance_period, threshold, remaining, now],
      );
      if (fresh.length === 0) continue;
      recorded += 1;
      const workspaces = await execIn<{ id: string }>(tx, `select id from workspaces where account_id = ? order by created_at`, [accountId]);
      for (const workspace of workspaces) {
        await recordEvent(
          tx,
          {
            workspaceId: workspace.id,
            type: 'credits.low',
            dedupeKey: `credits.low:${accountId}:${account.allowance_period}:${threshold}:${workspace.id}`,
            data: {
              account_id: accountId,
              threshold,
              remaining,
              allowance_remaining: account.allowance_remaining,
              purchased_balance: account.purchased_balance,
              monthly_allowance: account.monthly_allowance,
              period: account.allowance_period,
            },
          },
          now,
        );
      }
    }
    return recorded;
  });
}

/**
 * The safety net of the sweep: accounts at or below a threshold this period with fewer alerts than
 * thresholds crossed (their charging process died before its check).
 */
// Sums and percentages of balances in bigint: integers of the account's columns summed or scaled
// overflow PostgreSQL's int (a balance above 21,474,836 credits made the whole sweep fail).
export async function sweepCreditAlerts(em: EntityManager, now: Date): Promise<number> {
  const period = now.toISOString().slice(0, 7);
  const due = await em.getConnection().execute<Array<{ id: string }>>(
    `select a.id from accounts a
      where a.allowance_period = ? and a.monthly_allowance > 0
        and (a.allowance_remaining::bigint + a.purchased_balance) * 100 <= a.monthly_allowance::bigint * 20
        and (select count(*) from credit_alerts c where c.account_id = a.id and c.period = a.allowance_period)
            < case when a.allowance_remaining::bigint + a.purchased_balance <= 0 then 3
                   when (a.allowance_remaining::bigint + a.purchased_balance) * 100 <= a.monthly_allowance::bigint * 5 then 2 else 1 end
      limit 500`,
    [period],
  );
  let recorded = 0;
  for (const { id } of due) recorded += await checkCreditAlerts(em.fork(), id, now);
  return recorded;
}
