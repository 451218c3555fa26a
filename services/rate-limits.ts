import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { EntityManager, Knex } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { RATE_LIMITS, RATE_LIMIT_WINDOW_SECONDS, type PlanName } from '../config/plans';
import { AppError } from './errors';

export const RATE_LIMIT_TABLE = 'rate_limits';

/** A counter whose window ended this long ago is removed by the sweep (a call then starts a new one, as it would anyway). */
const EXPIRED_COUNTER_GRACE_MS = 3_600_000;
/** Counters removed by one sweep at most: a backlog goes over several runs. */
const COUNTER_PRUNE_BATCH = 10_000;

/**
 * Removes the budget counters whose window ended more than an hour ago (run by the periodic sweep,
 * on the table's `expire` index). rate-limiter-flexible's PostgreSQL store deletes nothing unless
 * told to, so every counter stayed for good: one row per sign-in step, address and client ever seen
 * (anyone can add them, one per new address), per API key and per workspace, erased ones included.
 * An expired counter counts nothing: the next call in its key starts a new window either way.
 */
export async function pruneRateLimitCounters(em: EntityManager, now: Date): Promise<number> {
  const rows = await em.getConnection().execute<Array<{ n: number }>>(
    `with gone as (delete from ${RATE_LIMIT_TABLE} where key in (select key from ${RATE_LIMIT_TABLE} where expire < ? limit ${COUNTER_PRUNE_BATCH}) returning 1)
     select count(*)::int as n from gone`,
    [now.getTime() - EXPIRED_COUNTER_GRACE_MS],
  );
  return rows[0]?.n ?? 0;
}

export interface RateBudget {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** A refused call: 429 RATE_LIMITED, with what the caller needs to wait. */
export class RateLimited extends AppError {
  constructor(readonly budget: RateBudget, scope: BudgetScope | 'sign-in' | 'billing') {
    const what = { key: 'this API key', workspace: 'this workspace', 'sign-in': 'this sign-in step', billing: "this account's payment calls" }[scope];
    super('RATE_LIMITED', 429, `Too many requests for ${what}; retry in ${budget.resetSeconds} s.`, {
      retry_after_seconds: budget.resetSeconds,
    });
  }
}

/** Where a limiter's counters are written: the ORM's query builder, or a pg pool (the call pool). */
export type LimiterStore = { knex: Knex } | { pool: Pool };

/** A limiter counting in the shared PostgreSQL table (created by a migration, not at run time). */
export function postgresLimiter(store: LimiterStore, keyPrefix: string, points: number, durationSeconds: number): RateLimiterPostgres {
  const client = 'knex' in store ? { storeClient: store.knex, storeType: 'knex' } : { storeClient: store.pool, storeType: 'pool' };
  return new RateLimiterPostgres({ ...client, tableName: RATE_LIMIT_TABLE, tableCreated: true, keyPrefix, points, duration: durationSeconds });
}

function budgetOf(res: RateLimiterRes, limit: number): RateBudget {
  return { limit, remaining: Math.max(0, res.remainingPoints), resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
}

/** Calls a plan allows per window, per key and per workspace. */
export function callBudgetLimits(plan: PlanName): { key: number; workspace: number } {
  return { key: RATE_LIMITS[plan].perKey * RATE_LIMIT_WINDOW_SECONDS, workspace: RATE_LIMITS[plan].perWorkspace * RATE_LIMIT_WINDOW_SECONDS };
}

/** The two call budgets every API-key call is counted on. */
export type BudgetScope = 'key' | 'workspace';

/**
 * The row key of a call budget as a SQL expression: the library's `${keyPrefix}:${key}` with the
 * prefix `${scope}:${plan}` that RateLimits gives its limiters (a plan change starts new counters).
 */
export const budgetKeySql = (scope: BudgetScope, planExpression: string, idExpression: string): string =>
  `'${scope}:' || ${planExpression} || ':' || ${idExpression}`;

/** The row key of a call budget, as budgetKeySql writes it in SQL. */
export const budgetKey = (scope: BudgetScope, plan: PlanName, id: string): string => `${scope}:${plan}:${id}`;

/**
 * Request budgets per API key and per workspace by plan, counted in PostgreSQL (rate-limiter-flexible)
 * so that every API process shares them. The table is created by a migration, not at run time.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterPostgres>();

  /** `callPool`: the counters are written on every call, so they commit like its other statements (db/call-pool.ts). */
  constructor(private readonly callPool: Pool) {}

  private limiter(scope: BudgetScope, plan: PlanName): { limiter: RateLimiterPostgres; points: number } {
    const points = callBudgetLimits(plan)[scope];
    const name = `${scope}:${plan}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      limiter = postgresLimiter({ pool: this.callPool }, name, points, RATE_LIMIT_WINDOW_SECONDS);
      this.limiters.set(name, limiter);
    }
    return { limiter, points };
  }

  /**
   * Counts one call of a web session against its own (`key` scope, by `session:<id>`) and its
   * workspace's budgets (API keys are counted by their authentication's statement, api-keys.ts);
   * throws RateLimited when either is spent. Answers the tighter of the two budgets left, for the
   * RateLimit headers.
   */
  async consume(caller: { keyId: string; workspaceId: string; plan: PlanName }): Promise<RateBudget> {
    const scopes: Array<[BudgetScope, string]> = [
      ['key', caller.keyId],
      ['workspace', caller.workspaceId],
    ];
    // Both budgets are counted at once (two statements in flight, one round trip of latency).
    const budgets = scopes.map(([scope, id]) => ({ scope, id, ...this.limiter(scope, caller.plan) }));
    const outcomes = await Promise.allSettled(budgets.map((b) => b.limiter.consume(b.id)));
    let tightest: RateBudget | null = null;
    outcomes.forEach((outcome, i) => {
      const { scope, points } = budgets[i]!;
      if (outcome.status === 'rejected') {
        if (outcome.reason instanceof RateLimiterRes) throw new RateLimited(budgetOf(outcome.reason, points), scope);
        throw outcome.reason;
      }
      const budget = budgetOf(outcome.value, points);
      if (!tightest || budget.remaining < tightest.remaining) tightest = budget;
    });
    return tightest!;
  }
}

