import { LRUCache } from 'lru-cache';
import type { RateBudget } from './rate-limits';

/**
 * A process's leases on the call budgets counted in PostgreSQL (rate-limits.ts, api-keys.ts).
 *
 * Counting every call in the shared table is a write per call: without it a one-row prediction serves
 * about a third more calls per second (bench/RESULTS.md). So a process claims several points of a counter at
 * once, adding them to the shared row, and spends them in memory on the calls that follow; the claim
 * doubles while the process keeps spending its leases within one window, up to a twentieth of the
 * budget. The shared row therefore never counts fewer points than every process together admitted,
 * and no budget is ever exceeded across processes; what a process claimed and did not spend before
 * the window ends is lost to the others (at most a twentieth of the budget per process and counter).
 */
export interface Lease {
  /** The window the lease belongs to: the counter row's expiry, in ms. */
  expireMs: number;
  /** Points granted to this process in this window, and how many of them it has spent. */
  granted: number;
  used: number;
  /** The highest count the shared row was seen at (capped at the budget), this process's grants included. */
  seen: number;
  /** The size of the next claim in this window. */
  nextClaim: number;
}

/** A claim's answer: the counter's points after `claimed` were added to it, and its window's expiry. */
export interface Claimed {
  claimed: number;
  points: number;
  expireMs: number;
}

const MAX_SHARE = 20;

export class BudgetLeases {
  private readonly leases = new LRUCache<string, Lease>({ max: 20_000 });

  /** The points one claim may take: a twentieth of the budget, at least one. */
  static maxClaim(limit: number): number {
    return Math.max(1, Math.floor(limit / MAX_SHARE));
  }

  private current(counter: string, nowMs: number): Lease | null {
    const lease = this.leases.get(counter);
    return lease && lease.expireMs > nowMs ? lease : null;
  }

  /** Spends one point of the lease in hand, if there is one with a point left. */
  take(counter: string, nowMs: number): boolean {
    const lease = this.current(counter, nowMs);
    if (!lease || lease.used >= lease.granted) return false;
    lease.used += 1;
    return true;
  }

  /** Gives back a point taken for a call that was not counted after all (its key may not call). */
  giveBack(counter: string, nowMs: number): void {
    const lease = this.current(counter, nowMs);
    if (lease && lease.used > 0) lease.used -= 1;
  }

  /** How many points to claim now: 1 in a new window, then double the last claim while it was granted whole. */
  claimSize(counter: string, nowMs: number): number {
    return this.current(counter, nowMs)?.nextClaim ?? 1;
  }

  /**
   * Records a claim's answer and spends one of its points on the call that claimed, if any is left
   * (false: the budget is spent). Of `claimed`, only what fits under `limit` is granted.
   */
  settle(counter: string, limit: number, answer: Claimed, nowMs: number): boolean {
    const before = answer.points - answer.claimed;
    const granted = Math.min(answer.claimed, Math.max(0, limit - before));
    const seen = Math.min(answer.points, limit);
    const nextClaim = granted === answer.claimed ? Math.min(BudgetLeases.maxClaim(limit), answer.claimed * 2) : 1;
    const lease = this.leases.get(counter);
    if (lease && lease.expireMs === answer.expireMs) {
      // Claims of one window by concurrent calls add up.
      lease.granted += granted;
      lease.seen = Math.max(lease.seen, seen);
      lease.nextClaim = nextClaim;
    } else if (!lease || lease.expireMs < answer.expireMs) {
      this.leases.set(counter, { expireMs: answer.expireMs, granted, used: 0, seen, nextClaim });
    } else {
      // The answer of an older window, arriving late: it admits its own call only.
      return granted > 0;
    }
    return this.take(counter, nowMs);
  }

  /** What is left of a counter's budget as this process sees it: the shared count less its own unspent points. */
  budget(counter: string, limit: number, nowMs: number): RateBudget {
    const lease = this.current(counter, nowMs);
    if (!lease) return { limit, remaining: limit, resetSeconds: 1 };
    return {
      limit,
      remaining: Math.max(0, limit - lease.seen + (lease.granted - lease.used)),
      resetSeconds: Math.max(1, Math.ceil((lease.expireMs - nowMs) / 1000)),
    };
  }
}
