import { trialRun, type Row } from '../../../engines/tabular/index';
import { Prng } from '../../../engines/tabular/prng';
import { signalRows } from './helpers';

describe('trial run verdicts', () => {
  it('says usable for a genuine, imperfect signal', () => {
    const r = trialRun(signalRows(400, 5, 'binary'), { target: 'target', seed: 1 });
    expect(r.verdict.level).toBe('usable');
    expect(r.metrics.metric).toBe('roc_auc');
    expect(r.metrics.score).toBeGreaterThan(r.metrics.baseline_score);
    expect(r.metrics.test_rows + r.metrics.train_rows).toBe(400);
    expect(r.metrics.test_rows).toBe(100);
    expect(r.hint.length).toBeGreaterThan(10);
  });

  it('says weak and names the column when one column alone determines the target', () => {
    const rows = signalRows(400, 6, 'binary').map((r, i) => ({
      ...r,
      // filled in after the event: a status that mirrors the outcome
      settled_status: r.target === 'yes' ? (i % 2 ? 'closed-won' : 'won') : 'lost',
    }));
    const r = trialRun(rows, { target: 'target', seed: 1 });
    expect(r.verdict.level).toBe('weak');
    expect(r.verdict.column).toBe('settled_status');
    expect(r.verdict.message).toContain('settled_status');
    expect(r.hint).toContain('settled_status');
  });

  it('says weak for a leaking numeric column in regression', () => {
    const rows = signalRows(400, 8, 'regression').map((r) => ({ ...r, final_amount: (r.target as number) * 3 + 1 }));
    const r = trialRun(rows, { target: 'target', seed: 2 });
    expect(r.verdict.level).toBe('weak');
    expect(r.verdict.column).toBe('final_amount');
  });

  it('says no_signal for pure noise', () => {
    const rng = new Prng(77);
    const rows: Row[] = Array.from({ length: 400 }, () => ({
      a: rng.nextFloat(),
      b: rng.nextFloat() * 100,
      c: ['u', 'v', 'w'][rng.nextInt(3)],
      target: rng.nextFloat() < 0.4 ? 'yes' : 'no',
    }));
    const r = trialRun(rows, { target: 'target', seed: 3 });
    expect(r.verdict.level).toBe('no_signal');
    expect(r.hint.length).toBeGreaterThan(10);
    const reg: Row[] = Array.from({ length: 300 }, () => ({ a: rng.nextFloat(), b: rng.nextFloat(), target: rng.nextFloat() * 50 }));
    expect(trialRun(reg, { target: 'target', seed: 3 }).verdict.level).toBe('no_signal');
  });
});
