import { RateLimiterRes, type RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Pool } from 'pg';
import { BACKTEST_POINTS_PER_DAY, FREE_BUDGET_WINDOW_SECONDS, VALIDATIONS_PER_DAY, type PlanName } from '../config/plans';
import { AppError } from './errors';
import type { BacktestAnswer } from './backtest-rows';
import { postgresLimiter } from './rate-limits';

/**
 * A free route's daily budget per account, counted in the shared PostgreSQL counters so that every
 * API process shares it. A call is counted once its answer is ready, before it is sent: a refused one
 * tells nothing of it. A refused call is not counted.
 */
class DailyFreeBudget {
  private readonly limiters = new Map<PlanName, RateLimiterPostgres>();

  constructor(
    private readonly callPool: Pool,
    private readonly name: string,
    private readonly perDay: Record<PlanName, number>,
  ) {}

  limit(plan: PlanName): number {
    return this.perDay[plan];
  }

  /**
   * 429 RATE_LIMITED at once when the account's budget is already spent (nothing counted), so that
   * a call past it is refused before its work (a twenty-second probe: each still fitted its trial).
   */
  async refuseWhenSpent(caller: { accountId: string; plan: PlanName }, what: (left: number, limit: number) => string): Promise<void> {
    const limit = this.perDay[caller.plan];
    const spent = await this.limiterOf(caller.plan).get(caller.accountId);
    if (spent && spent.consumedPoints >= limit) {
      const seconds = Math.max(1, Math.ceil(spent.msBeforeNext / 1000));
      throw new AppError('RATE_LIMITED', 429, `${what(0, limit)}; retry in ${seconds} s.`, { retry_after_seconds: seconds, limit });
    }
  }

  private limiterOf(plan: PlanName): RateLimiterPostgres {
    let limiter = this.limiters.get(plan);
    if (!limiter) {
      limiter = postgresLimiter({ pool: this.callPool }, `${this.name}:${plan}`, this.perDay[plan], FREE_BUDGET_WINDOW_SECONDS);
      this.limiters.set(plan, limiter);
    }
    return limiter;
  }

  /** Counts `points` for the account, or 429 RATE_LIMITED with Retry-After; `what` says what a point is, in the refusal. */
  async spend(caller: { accountId: string; plan: PlanName }, points: number, what: (left: number, limit: number) => string): Promise<void> {
    if (points === 0) return;
    const limiter = this.limiterOf(caller.plan);
    try {
      await limiter.consume(caller.accountId, points);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // The library counts a refused call too: given back, so that only answered calls count.
      await limiter.reward(caller.accountId, points);
      const limit = this.perDay[caller.plan];
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      const left = Math.max(0, limit - (err.consumedPoints - points));
      throw new AppError('RATE_LIMITED', 429, `${what(left, limit)}; retry in ${seconds} s.`, { retry_after_seconds: seconds, limit });
    }
  }
}

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * The free backtest's forecast points (series-windows × horizon) per account and day
 * (BACKTEST_POINTS_PER_DAY): its last window scores the forecast the paid route would answer.
 */
export class BacktestBudget {
  private readonly budget: DailyFreeBudget;

  constructor(callPool: Pool) {
    this.budget = new DailyFreeBudget(callPool, 'backtest', BACKTEST_POINTS_PER_DAY);
  }

  /** 429 before the work when the account has no point left today. */
  async refuseWhenSpent(caller: { accountId: string; plan: PlanName }): Promise<void> {
    await this.budget.refuseWhenSpent(caller, (_left, limit) => `This account backtested the ${count(limit)} forecast points its plan allows a day`);
  }

  /** The answer, once counted; 413 DATASET_TOO_LARGE when one backtest holds more than a whole day's budget (waiting would not help). */
  async admit(caller: { accountId: string; plan: PlanName }, answer: BacktestAnswer): Promise<BacktestAnswer> {
    const limit = this.budget.limit(caller.plan);
    const points = answer.windows * answer.horizon;
    if (points > limit) {
      throw new AppError(
        'DATASET_TOO_LARGE',
        413,
        `This backtest scores ${count(points)} forecast points (series-windows × horizon); the ${caller.plan} plan backtests at most ${count(limit)} a day. Send fewer series or a shorter horizon.`,
        { limit },
      );
    }
    await this.budget.spend(caller, points, (left) => `This backtest scores ${count(points)} forecast points and this account has ${count(left)} of its ${count(limit)} a day left`);
    return answer;
  }
}

/**
 * The free validation's calls per account and day (VALIDATIONS_PER_DAY): its trial's held-out error
 * tells the trial model's prediction of a row added to the data.
 */
export class ValidationBudget {
  private readonly budget: DailyFreeBudget;

  constructor(callPool: Pool) {
    this.budget = new DailyFreeBudget(callPool, 'validation', VALIDATIONS_PER_DAY);
  }

  private readonly spent = (_left: number, limit: number): string => `This account ran the ${count(limit)} validations its plan allows a day`;

  /** 429 before the work when the account has no validation left today. */
  async refuseWhenSpent(caller: { accountId: string; plan: PlanName }): Promise<void> {
    await this.budget.refuseWhenSpent(caller, this.spent);
  }

  async admit<T>(caller: { accountId: string; plan: PlanName }, report: T): Promise<T> {
    await this.budget.spend(caller, 1, this.spent);
    return report;
  }
}
