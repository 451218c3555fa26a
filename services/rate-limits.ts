import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Knex } from '@mikro-orm/postgresql';
import { RATE_LIMITS, RATE_LIMIT_WINDOW_SECONDS, type PlanName } from '../config/plans';
import { AppError } from './errors';

export const RATE_LIMIT_TABLE = 'rate_limits';

export interface RateBudget {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** A refused call: 429 RATE_LIMITED, with what the caller needs to wait. */
export class RateLimited extends AppError {
  constructor(readonly budget: RateBudget, scope: 'key' | 'workspace' | 'sign-in') {
    const what = { key: 'this API key', workspace: 'this workspace', 'sign-in': 'this sign-in step' }[scope];
    super('RATE_LIMITED', 429, `Too many requests for ${what}; retry in ${budget.resetSeconds} s.`, {
      retry_after_seconds: budget.resetSeconds,
    });
  }
}

/** A limiter counting in the shared PostgreSQL table (created by a migration, not at run time). */
export function postgresLimiter(knex: Knex, keyPrefix: string, points: number, durationSeconds: number): RateLimiterPostgres {
  return new RateLimiterPostgres({ storeClient: knex, storeType: 'knex', tableName: RATE_LIMIT_TABLE, tableCreated: true, keyPrefix, points, duration: durationSeconds });
}

function budgetOf(res: RateLimiterRes, limit: number): RateBudget {
  return { limit, remaining: Math.max(0, res.remainingPoints), resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
}

/**
 * Request budgets per API key and per workspace by plan, counted in PostgreSQL (rate-limiter-flexible)
 * so that every API process shares them. The table is created by a migration, not at run time.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterPostgres>();

  constructor(private readonly knex: Knex) {}

  private limiter(scope: 'key' | 'workspace', plan: PlanName): { limiter: RateLimiterPostgres; points: number } {
    const points = (scope === 'key' ? RATE_LIMITS[plan].perKey : RATE_LIMITS[plan].perWorkspace) * RATE_LIMIT_WINDOW_SECONDS;
    const name = `${scope}:${plan}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      limiter = postgresLimiter(this.knex, name, points, RATE_LIMIT_WINDOW_SECONDS);
      this.limiters.set(name, limiter);
    }
    return { limiter, points };
  }

  /**
   * Counts one call against the key's and the workspace's budgets; throws RateLimited when either is
   * spent. Answers the tighter of the two budgets left, for the RateLimit headers.
   */
  async consume(caller: { keyId: string | null; workspaceId: string; plan: PlanName }): Promise<RateBudget> {
    const scopes: Array<['key' | 'workspace', string]> = [['workspace', caller.workspaceId]];
    if (caller.keyId) scopes.unshift(['key', caller.keyId]);
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

