import { RateLimiterRes, type RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Pool } from 'pg';
import { BACKTEST_BUDGET_WINDOW_SECONDS, BACKTEST_POINTS_PER_DAY, type PlanName } from '../config/plans';
import { AppError } from './errors';
import type { BacktestAnswer } from './backtest-rows';
import { postgresLimiter } from './rate-limits';

/**
 * The free backtest's daily budget per account (BACKTEST_POINTS_PER_DAY), counted in the shared
 * PostgreSQL counters so that every API process shares it. A backtest is counted once its windows are
 * known, before its answer is sent: a refused one tells nothing of its scores.
 */
export class BacktestBudget {
  private readonly limiters = new Map<PlanName, RateLimiterPostgres>();

  constructor(private readonly callPool: Pool) {}

  private limiter(plan: PlanName): RateLimiterPostgres {
    let limiter = this.limiters.get(plan);
    if (!limiter) {
      limiter = postgresLimiter({ pool: this.callPool }, `backtest:${plan}`, BACKTEST_POINTS_PER_DAY[plan], BACKTEST_BUDGET_WINDOW_SECONDS);
      this.limiters.set(plan, limiter);
    }
    return limiter;
  }

  /**
   * The answer, once its points (series-windows × horizon) are counted: 429 RATE_LIMITED with
   * Retry-After when the account's budget cannot hold them (nothing counted), 413 DATASET_TOO_LARGE
   * when one backtest holds more than a whole day's budget (waiting would not help).
   */
  async admit(caller: { accountId: string; plan: PlanName }, answer: BacktestAnswer): Promise<BacktestAnswer> {
    const limit = BACKTEST_POINTS_PER_DAY[caller.plan];
    const points = answer.windows * answer.horizon;
    if (points > limit) {
      throw new AppError(
        'DATASET_TOO_LARGE',
        413,
        `This backtest scores ${points.toLocaleString('en-US')} forecast points (series-windows × horizon); the ${caller.plan} plan backtests at most ${limit.toLocaleString('en-US')} a day. Send fewer series or a shorter horizon.`,
        { limit },
      );
    }
    if (points === 0) return answer;
    const limiter = this.limiter(caller.plan);
    try {
      await limiter.consume(caller.accountId, points);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // The library counts a refused call too: given back, so that only answered backtests count.
      await limiter.reward(caller.accountId, points);
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      const left = Math.max(0, limit - (err.consumedPoints - points));
      throw new AppError(
        'RATE_LIMITED',
        429,
        `This backtest scores ${points.toLocaleString('en-US')} forecast points and this account has ${left.toLocaleString('en-US')} of its ${limit.toLocaleString('en-US')} a day left; retry in ${seconds} s.`,
        { retry_after_seconds: seconds, limit },
      );
    }
    return answer;
  }
}
