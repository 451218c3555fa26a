import { predictRows, trainTabular, trialRun, type Row } from '../../../engines/tabular/index';

describe('edge cases', () => {
  it('trains, predicts and runs a trial on the minimum of 10 rows', () => {
    const rows: Row[] = Array.from({ length: 10 }, (_, i) => ({ x: i, c: i % 3 === 0 ? 'a' : 'b', target: i < 5 ? 'lo' : 'hi' }));
    const t = trainTabular(rows, { target: 'target', seed: 1, explain: true });
    expect(predictRows(t.model, rows)).toHaveLength(10);
    const trial = trialRun(rows, { target: 'target', seed: 1 });
    expect(['usable', 'weak', 'no_signal']).toContain(trial.verdict.level);
    expect(trial.metrics.test_rows).toBeGreaterThan(0);
  });

  it('copes with a class of a single row and an all-missing feature at prediction time', () => {
    const rows: Row[] = Array.from({ length: 60 }, (_, i) => ({ x: i % 10, y: i % 7 === 0 ? null : i, target: i === 0 ? 'rare' : i % 2 ? 'odd' : 'even' }));
    const t = trainTabular(rows, { target: 'target', seed: 2 });
    expect(t.report.task).toBe('multiclass');
    const p = predictRows(t.model, [{ x: null, y: null }])[0];
    expect(Object.keys(p.probabilities ?? {}).sort()).toEqual(['even', 'odd', 'rare']);
    expect(Object.values(p.probabilities ?? {}).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  });

  it('predicts an empty batch', () => {
    const rows: Row[] = Array.from({ length: 30 }, (_, i) => ({ x: (i * 7) % 30, target: i * 1.5 }));
    const t = trainTabular(rows, { target: 'target', seed: 3 });
    expect(predictRows(t.model, [])).toEqual([]);
  });
});
