import { BudgetLeases, type Claimed } from '../../../services/budget-leases';

/**
 * A shared counter as PostgreSQL keeps it (api-keys.ts, KEY_AND_CLAIMS_SQL): a claim adds its points,
 * and the first claim after the window's end starts a new window with them.
 */
class SharedCounter {
  points = 0;
  expireMs = 0;
  constructor(private readonly windowMs: number) {}
  claim(claimed: number, nowMs: number): Claimed {
    if (this.expireMs <= nowMs) {
      this.points = claimed;
      this.expireMs = nowMs + this.windowMs;
    } else this.points += claimed;
    return { claimed, points: this.points, expireMs: this.expireMs };
  }
}

/** One call of a process: a point from its lease, else a claim on the shared counter. */
function call(leases: BudgetLeases, counter: SharedCounter, limit: number, nowMs: number): { admitted: boolean; claimed: boolean } {
  if (leases.take('c', nowMs)) return { admitted: true, claimed: false };
  return { admitted: leases.settle('c', limit, counter.claim(leases.claimSize('c', nowMs), nowMs), nowMs), claimed: true };
}

describe('budget leases', () => {
  it('never admits more than a window\'s budget across three processes sharing one counter, and loses at most what each holds unspent', () => {
    const limit = 200;
    const counter = new SharedCounter(10_000);
    const processes = [new BudgetLeases(), new BudgetLeases(), new BudgetLeases()];
    let admitted = 0;
    // Calls until every process is refused: the leases they hold are spent by the end.
    const refused = new Set<number>();
    for (let i = 0; refused.size < processes.length && i < 10_000; i += 1) {
      const p = (i * 7) % 3 === 0 ? 0 : i % 2 === 0 ? 1 : 2;
      if (call(processes[p]!, counter, limit, 1_000).admitted) admitted += 1;
      else refused.add(p);
    }
    expect(admitted).toBeLessThanOrEqual(limit);
    // What a process claimed and had not spent when it was refused is all that is lost.
    expect(admitted).toBeGreaterThan(limit - processes.length * BudgetLeases.maxClaim(limit));
  });

  it('claims 1, 2, 4, … points while a process spends its leases within a window, up to a twentieth of the budget', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    const claims: number[] = [];
    for (let i = 0; i < 300; i += 1) {
      const size = leases.claimSize('c', 0);
      if (call(leases, counter, 2_000, 0).claimed) claims.push(size);
    }
    expect(claims.slice(0, 8)).toEqual([1, 2, 4, 8, 16, 32, 64, 100]);
    expect(claims.slice(7).every((c) => c === 100)).toBe(true);
    expect(counter.points).toBe(claims.reduce((a, b) => a + b, 0));
  });

  it('reports what is left as the shared count less its own unspent points, and the seconds to the window end', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    counter.claim(30, 0); // another process's points
    for (let i = 1; i <= 5; i += 1) {
      expect(call(leases, counter, 100, 2_500).admitted).toBe(true);
      expect(leases.budget('c', 100, 2_500)).toEqual({ limit: 100, remaining: 100 - 30 - i, resetSeconds: 8 });
    }
  });

  it('grants a claim only what fits under the budget, and refuses when nothing does', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    counter.claim(98, 0);
    expect(leases.settle('c', 100, counter.claim(5, 0), 0)).toBe(true);
    expect(leases.take('c', 0)).toBe(true);
    expect(leases.take('c', 0)).toBe(false);
    expect(leases.budget('c', 100, 0).remaining).toBe(0);
    expect(leases.settle('c', 100, counter.claim(leases.claimSize('c', 0), 0), 0)).toBe(false);
    // After a refused claim the next one is of one point again.
    expect(leases.claimSize('c', 0)).toBe(1);
  });

  it('starts again from one point in a new window, leaving the old window\'s unspent points behind', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    for (let i = 0; i < 20; i += 1) call(leases, counter, 2_000, 0);
    expect(leases.claimSize('c', 0)).toBeGreaterThan(1);
    expect(leases.take('c', 10_000)).toBe(false);
    expect(leases.claimSize('c', 10_000)).toBe(1);
    expect(call(leases, counter, 2_000, 10_000)).toEqual({ admitted: true, claimed: true });
    expect(counter.points).toBe(1);
  });

  it('adds up the claims of concurrent calls in one window, and lets a late answer of an older window admit only its own call', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    const first = counter.claim(4, 0);
    const second = counter.claim(4, 0);
    expect(leases.settle('c', 100, first, 0)).toBe(true);
    expect(leases.settle('c', 100, second, 0)).toBe(true);
    // 8 granted, 2 spent by the claiming calls: 6 left in hand.
    let inHand = 0;
    while (leases.take('c', 0)) inHand += 1;
    expect(inHand).toBe(6);
    const next = counter.claim(1, 20_000);
    expect(leases.settle('c', 100, next, 20_000)).toBe(true);
    expect(leases.settle('c', 100, { claimed: 2, points: 10, expireMs: 10_000 }, 20_000)).toBe(true);
    expect(leases.take('c', 20_000)).toBe(false);
  });

  it('gives back a point taken for a call that was not counted', () => {
    const leases = new BudgetLeases();
    const counter = new SharedCounter(10_000);
    call(leases, counter, 100, 0);
    call(leases, counter, 100, 0); // claims 2: one left in hand
    expect(leases.take('c', 0)).toBe(true);
    leases.giveBack('c', 0);
    expect(leases.take('c', 0)).toBe(true);
    expect(leases.take('c', 0)).toBe(false);
  });
});
