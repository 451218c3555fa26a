import { LRUCache } from 'lru-cache';
import { RateLimiterRes, type RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Pool } from 'pg';
import { addressHash } from './address-hash';
import { BACKTEST_POINTS_PER_DAY, FREE_BUDGET_WINDOW_SECONDS, VALIDATIONS_PER_DAY, type PlanName } from '../config/plans';
import { AppError } from './errors';
import type { BacktestAnswer } from './backtest-rows';
import { postgresLimiter } from './rate-limits';

type Caller = { accountId: string; plan: PlanName };

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * A free route's daily budget per account, counted by its address's hash (an account's address never
 * changes), so that deleting the account and signing up again with the same address does not start a
 * fresh day (a twenty-first probe; the month's allowance already followed the address,
 * services/closed-allowances.ts); counted in the shared PostgreSQL counters so that every
 * API process shares it. A call past a spent budget is refused before its work; otherwise it is
 * counted once its answer is ready, before it is sent, so a refused one tells nothing of it. A refused
 * call is not counted. `A` is the route's answer, whose points a subclass reads.
 */
abstract class DailyFreeBudget<A> {
  private readonly limiters = new Map<PlanName, RateLimiterPostgres>();
  /** Account id → its address's hash; an account's address is fixed for its life. */
  private readonly subjects = new LRUCache<string, string>({ max: 10_000 });

  constructor(
    private readonly callPool: Pool,
    private readonly name: string,
    private readonly perDay: Record<PlanName, number>,
  ) {}

  /** The answer's points; may refuse an answer that no day's budget holds. */
  protected abstract pointsOf(answer: A, caller: Caller, limit: number): number;
  /** The refusal's sentence, before "; retry in …". */
  protected abstract refusal(points: number, left: number, limit: number): string;

  /** The work's answer, refused before the work when the budget is spent, or after it when its points do not fit. */
  async run<T extends A>(caller: Caller, work: () => Promise<T>): Promise<T> {
    await this.refuseWhenSpent(caller);
    return this.admit(caller, await work());
  }

  /** An answer whose work is done (a staged body's): counted, or refused. */
  async admit<T extends A>(caller: Caller, answer: T): Promise<T> {
    const limit = this.perDay[caller.plan];
    const points = this.pointsOf(answer, caller, limit);
    if (points === 0) return answer;
    const limiter = this.limiterOf(caller.plan);
    const subject = await this.subjectOf(caller);
    try {
      await limiter.consume(subject, points);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // The library counts a refused call too: given back, so that only answered calls count.
      await limiter.reward(subject, points);
      throw this.spent(err.msBeforeNext, this.refusal(points, Math.max(0, limit - (err.consumedPoints - points)), limit), limit);
    }
    return answer;
  }

  /** 429 at once when nothing is left (a twenty-second probe: each call past the budget still did its work). */
  private async refuseWhenSpent(caller: Caller): Promise<void> {
    const limit = this.perDay[caller.plan];
    const used = await this.limiterOf(caller.plan).get(await this.subjectOf(caller));
    if (used && used.consumedPoints >= limit) throw this.spent(used.msBeforeNext, this.refusal(1, 0, limit), limit);
  }

  private async subjectOf(caller: Caller): Promise<string> {
    const known = this.subjects.get(caller.accountId);
    if (known) return known;
    const { rows } = await this.callPool.query<{ email: string }>('select email from accounts where id = $1', [caller.accountId]);
    // An account gone meanwhile (deleted during the call) is counted by its id, as before.
    const subject = rows[0] ? addressHash(rows[0].email) : caller.accountId;
    if (rows[0]) this.subjects.set(caller.accountId, subject);
    return subject;
  }

  private spent(msBeforeNext: number, sentence: string, limit: number): AppError {
    const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
    return new AppError('RATE_LIMITED', 429, `${sentence}; retry in ${seconds} s.`, { retry_after_seconds: seconds, limit });
  }

  private limiterOf(plan: PlanName): RateLimiterPostgres {
    let limiter = this.limiters.get(plan);
    if (!limiter) {
      limiter = postgresLimiter({ pool: this.callPool }, `${this.name}:${plan}`, this.perDay[plan], FREE_BUDGET_WINDOW_SECONDS);
      this.limiters.set(plan, limiter);
    }
    return limiter;
  }
}

/**
 * The free backtest's forecast points (series-windows × horizon) per account and day
 * (BACKTEST_POINTS_PER_DAY): its last window scores the forecast the paid route would answer.
 */
export class BacktestBudget extends DailyFreeBudget<BacktestAnswer> {
  constructor(callPool: Pool) {
    super(callPool, 'backtest', BACKTEST_POINTS_PER_DAY);
  }

  /** 413 DATASET_TOO_LARGE when one backtest holds more than a whole day's budget (waiting would not help). */
  protected pointsOf(answer: BacktestAnswer, caller: Caller, limit: number): number {
    const points = answer.windows * answer.horizon;
    if (points > limit) {
      throw new AppError(
        'DATASET_TOO_LARGE',
        413,
        `This backtest scores ${count(points)} forecast points (series-windows × horizon); the ${caller.plan} plan backtests at most ${count(limit)} a day. Send fewer series or a shorter horizon.`,
        { limit },
      );
    }
    return points;
  }

  protected refusal(points: number, left: number, limit: number): string {
    return left === 0
      ? `This account backtested the ${count(limit)} forecast points its plan allows a day`
      : `This backtest scores ${count(points)} forecast points and this account has ${count(left)} of its ${count(limit)} a day left`;
  }
}

/**
 * The free validation's calls per account and day (VALIDATIONS_PER_DAY): its trial's held-out error
 * tells the trial model's prediction of a row added to the data.
 */
export class ValidationBudget extends DailyFreeBudget<unknown> {
  constructor(callPool: Pool) {
    super(callPool, 'validation', VALIDATIONS_PER_DAY);
  }

  protected pointsOf(): number {
    return 1;
  }

  protected refusal(_points: number, _left: number, limit: number): string {
    return `This account ran the ${count(limit)} validations its plan allows a day`;
  }
}
