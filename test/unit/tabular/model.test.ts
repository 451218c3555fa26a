import {
  featureColumns, loadModel, predictRows, serialiseModel, trainTabular, TabularModelFormatError, TABULAR_ENGINE, type Row,
} from '../../../engines/tabular/index';
import { Prng } from '../../../engines/tabular/prng';
import { signalRows } from './helpers';

const FAST = { maxRounds: 150, folds: 3, models: 3 };

describe('training, prediction and artefact', () => {
  const rows = signalRows(300, 1, 'binary');
  const trained = trainTabular(rows, { target: 'target', seed: 7, explain: true, config: FAST });

  it('predicts labels of the original type with probabilities summing to 1', () => {
    const preds = predictRows(trained.model, rows.slice(0, 50));
    for (const p of preds) {
      expect(['yes', 'no']).toContain(p.prediction);
      const probs = Object.values(p.probabilities ?? {});
      expect(Object.keys(p.probabilities ?? {}).sort()).toEqual(['no', 'yes']);
      expect(probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    }
    expect(trained.validation.metric).toBe('roc_auc');
    expect(trained.validation.score).toBeGreaterThan(0.85);
    expect(trained.validation.baseline_score).toBe(0.5);
    let ok = 0;
    preds.forEach((p, i) => (ok += p.prediction === rows[i].target ? 1 : 0));
    expect(ok).toBeGreaterThan(40);
  });

  it('keeps numeric class labels as numbers and booleans as booleans', () => {
    const num = rows.map((r) => ({ ...r, target: r.target === 'yes' ? 1 : 0 }));
    const m1 = trainTabular(num, { target: 'target', seed: 1, config: FAST }).model;
    expect(typeof predictRows(m1, num.slice(0, 1))[0].prediction).toBe('number');
    const bool = rows.map((r) => ({ ...r, target: r.target === 'yes' }));
    const m2 = trainTabular(bool, { target: 'target', seed: 1, config: FAST }).model;
    const p = predictRows(m2, bool.slice(0, 1))[0];
    expect(typeof p.prediction).toBe('boolean');
    expect(Object.keys(p.probabilities ?? {}).sort()).toEqual(['false', 'true']);
  });

  it('accepts numeric strings, unseen categories and missing values at prediction time', () => {
    const odd: Row[] = [
      { x1: '8.5', x2: '1', color: 'red', x3: '0.5' },
      { x1: 8.5, x2: 1, color: 'red', x3: 0.5 },
      { x1: 8.5, x2: 1, color: 'purple', x3: 0.5 },
      { x1: null, x2: '', color: undefined, x3: null },
      {},
    ];
    const p = predictRows(trained.model, odd);
    expect(p[0]).toEqual(p[1]);
    for (const q of p) expect(Object.values(q.probabilities ?? {}).every((v) => Number.isFinite(v))).toBe(true);
  });

  it('round-trips the artefact to byte-identical predictions', () => {
    const text = serialiseModel(trained.model);
    const parsed = JSON.parse(text) as { formatVersion: number; engine: { id: string } };
    // 18.0.0 (the default) writes format 5, as 17.0.0 (format 4 plus an optional kNN part), the newest this engine reads
    expect(parsed.formatVersion).toBe(5);
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(parsed.engine.id).toBe('tabular-gbdt');
    const loaded = loadModel(text);
    expect(JSON.stringify(predictRows(loaded, rows))).toBe(JSON.stringify(predictRows(trained.model, rows)));
    expect(serialiseModel(loaded)).toBe(text);
    expect(featureColumns(loaded)).toEqual(['x1', 'x2', 'color', 'x3']);
  });

  it('refuses an unknown artefact format version', () => {
    const obj = JSON.parse(serialiseModel(trained.model)) as Record<string, unknown>;
    obj.formatVersion = 99;
    expect(() => loadModel(JSON.stringify(obj))).toThrow(TabularModelFormatError);
    expect(() => loadModel('not json')).toThrow(TabularModelFormatError);
  });

  it('is deterministic for a seed and varies with the seed', () => {
    const a = serialiseModel(trainTabular(rows, { target: 'target', seed: 3, config: FAST }).model);
    const b = serialiseModel(trainTabular(rows, { target: 'target', seed: 3, config: FAST }).model);
    const c = serialiseModel(trainTabular(rows, { target: 'target', seed: 4, config: FAST }).model);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it('explains with permutation importance shares', () => {
    const f = trained.topFactors ?? [];
    expect(f.length).toBeGreaterThan(1);
    expect(f.reduce((s, x) => s + x.importance, 0)).toBeCloseTo(1, 9);
    expect(['x1', 'x2']).toContain(f[0].feature);
    const noise = f.find((x) => x.feature === 'x3');
    expect(noise === undefined || noise.importance < 0.1).toBe(true);
  });

  it('reports progress', () => {
    const seen: number[] = [];
    trainTabular(rows, { target: 'target', seed: 1, config: FAST, onProgress: (p) => seen.push(p.done / p.total) });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen[seen.length - 1]).toBe(1);
  });

  it('handles multiclass and regression', () => {
    const mc = signalRows(300, 2, 'multiclass');
    const t = trainTabular(mc, { target: 'target', seed: 1, config: FAST });
    expect(t.report.task).toBe('multiclass');
    expect(t.validation.score).toBeLessThan(t.validation.baseline_score * 0.7);
    const p = predictRows(t.model, mc.slice(0, 5));
    for (const q of p) expect(Object.values(q.probabilities ?? {}).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    const rg = signalRows(300, 3, 'regression');
    const r = trainTabular(rg, { target: 'target', seed: 1, config: FAST });
    expect(r.report.task).toBe('regression');
    expect(r.validation.score).toBeLessThan(r.validation.baseline_score * 0.6);
    expect(typeof predictRows(r.model, rg.slice(0, 1))[0].prediction).toBe('number');
    const hub = trainTabular(rg, { target: 'target', seed: 1, config: { ...FAST, loss: 'huber' } });
    expect(hub.validation.score).toBeLessThan(hub.validation.baseline_score * 0.7);
  });
});

describe('categorical splits', () => {
  it('learns a target driven by a many-valued category through set splits', () => {
    const rng = new Prng(11);
    const cats = Array.from({ length: 20 }, (_, i) => `k${i}`);
    const good = new Set(['k1', 'k4', 'k5', 'k9', 'k12', 'k13', 'k17', 'k19']);
    const rows: Row[] = Array.from({ length: 600 }, () => {
      const c = cats[rng.nextInt(20)];
      return { c, noise: rng.nextFloat(), target: good.has(c) !== rng.nextFloat() < 0.05 ? 'p' : 'q' };
    });
    const t = trainTabular(rows, { target: 'target', seed: 2, config: { ...FAST, colsample: 1 } });
    expect(t.validation.score).toBeGreaterThan(0.9);
    const flags = t.model.predictor.nodeFlags;
    expect(Array.from(flags).some((f) => (f & 2) === 2)).toBe(true);
    for (const c of cats) {
      const p = predictRows(t.model, [{ c, noise: 0.5 }])[0];
      expect(p.prediction).toBe(good.has(c) ? 'p' : 'q');
    }
  });
});
