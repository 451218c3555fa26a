import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE, type Row } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { addKnnMember, categoryRuleFor, forestOverrideFor, groupOptionsFor, knnOptionsFor, prepare, trainPrepared, V17_KNN_MIN_GAIN, type Prepared } from '../../../engines/tabular/pipeline';
import { DEFAULT_KNN_OPTIONS, fitKnnOof, predictKnn, knnPart } from '../../../engines/tabular/knn';
import { mixWeight } from '../../../engines/tabular/forest';
import { rocAuc } from '../../../engines/tabular/metrics';
import { rawToOutput, type EngineConfigOverride } from '../../../engines/tabular/train';
import { Prng } from '../../../engines/tabular/prng';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** A smooth, local binary target (a product of sines) on 8 numeric columns (kNN's kind of problem), with a text column and missing values. */
function ballRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  return Array.from({ length: n }, (_, i) => {
    const x = Array.from({ length: 8 }, () => rng.nextFloat() * 2 - 1);
    const row: Record<string, unknown> = { target: Math.sin(3 * x[0]) * Math.sin(3 * x[1]) + 0.2 * (rng.nextFloat() - 0.5) > 0 ? 'in' : 'out', tag: ['a', 'b', 'c'][rng.nextInt(3)] };
    x.forEach((v, j) => (row[`x${j}`] = i % 17 === j ? null : v));
    return row as Row;
  });
}

function heldAuc(y: Float64Array, out: Float64Array): number {
  const rows: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(out[i * 2 + 1])) rows.push(i);
  return rocAuc(Float64Array.from(rows, (i) => y[i]), Float64Array.from(rows, (i) => out[i * 2 + 1]));
}

/**
 * Engine 17.0.0 (bench/RESULTS.md, nineteenth round of issue 15): 16.0.0 plus a k-nearest-neighbours
 * member on binary small data (knn.ts), mixed into the outputs by an out-of-fold weight and kept when
 * it raises the out-of-fold ROC AUC by at least V17_KNN_MIN_GAIN.
 */
describe('engine 17: 16.0.0 with a kNN member on small binary data', () => {
  it('sets the member only in 17.0.0 and keeps 16.0.0\'s other settings', () => {
    expect(V17_KNN_MIN_GAIN).toBe(0.008);
    expect(knnOptionsFor('17.0.0')).toEqual({ ...DEFAULT_KNN_OPTIONS, minGain: V17_KNN_MIN_GAIN });
    expect(knnOptionsFor('16.0.0')).toBeUndefined();
    expect(knnOptionsFor('16.0.0', { ks: [3] })).toEqual({ ...DEFAULT_KNN_OPTIONS, ks: [3] });
    expect(groupOptionsFor('17.0.0')).toEqual(groupOptionsFor('16.0.0'));
    expect(categoryRuleFor('17.0.0')).toBe(categoryRuleFor('16.0.0'));
    const shape = { task: 'binary', n: 3700, F: 57, nClasses: 2 } as Prepared;
    expect(forestOverrideFor('17.0.0', shape)).toEqual(forestOverrideFor('16.0.0', shape));
  });

  it('trains 16.0.0\'s model, but for its version and format, where the member is not kept (multiclass, regression, binary above small data)', () => {
    const cases = [['multiclass', 600], ['regression', 600], ['binary', 2400], ['binary', 300]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v16 = trainTabular(rows, { ...options, engineVersion: '16.0.0' }).model;
      const v17 = trainTabular(rows, { ...options, engineVersion: '17.0.0' }).model;
      if (v17.knn) continue; // the small binary case may keep it; checked below
      expect(serialiseModel(v17)).toBe(serialiseModel({ ...v16, engine: { ...v16.engine, version: '17.0.0' }, formatVersion: 5 }));
    }
  });

  it('fits the weight on out-of-fold outputs: in [0, 1], never worse there than the better member alone', () => {
    const p = prepare(ballRows(400, 3), 'target', 'classification', categoryRuleFor('17.0.0'));
    const r = trainPrepared(p, { engineVersion: '16.0.0', seed: 1, config: { ...FAST, maxRounds: 8 } });
    const modelOut = rawToOutput(p.task, r.core.oofRaw, p.n, p.nClasses);
    const folds = r.core.foldModels.map((f) => f.validRows);
    const fit = fitKnnOof(p.X, p.n, p.F, p.categorical, p.y, folds, DEFAULT_KNN_OPTIONS);
    const { weight } = mixWeight('binary', p.y, modelOut, fit.oofOut, 2, 'roc_auc');
    expect(weight).toBeGreaterThanOrEqual(0);
    expect(weight).toBeLessThanOrEqual(1);
    const mixed = modelOut.map((v, j) => (1 - weight) * v + weight * fit.oofOut[j]);
    // the two weights of the mixture, 1 - w and w, sum to one; the mixture beats or ties both members out of fold
    expect(heldAuc(p.y, mixed)).toBeGreaterThanOrEqual(Math.max(heldAuc(p.y, modelOut), heldAuc(p.y, fit.oofOut)) - 1e-12);
    const m = addKnnMember(p, r.core, modelOut, { ...DEFAULT_KNN_OPTIONS, minGain: 0 });
    expect(m.weight).toBe(weight);
    expect(m.part?.weight).toBe(weight > 0 ? weight : undefined);
    // every fold's k comes from the grid
    for (const k of fit.foldKs) expect(DEFAULT_KNN_OPTIONS.ks).toContain(k);
  });

  it('never uses a row\'s own target for its own out-of-fold output', () => {
    const p = prepare(ballRows(300, 5), 'target', 'classification', categoryRuleFor('17.0.0'));
    const folds = [0, 1, 2].map((f) => Int32Array.from({ length: p.n }, (_, i) => i).filter((i) => i % 3 === f));
    const base = fitKnnOof(p.X, p.n, p.F, p.categorical, p.y, folds, DEFAULT_KNN_OPTIONS);
    for (const i of [0, 7, 101, 299]) {
      const y = Float64Array.from(p.y);
      y[i] = 1 - y[i];
      const flipped = fitKnnOof(p.X, p.n, p.F, p.categorical, y, folds, DEFAULT_KNN_OPTIONS);
      expect(flipped.oofOut[i * 2 + 1]).toBe(base.oofOut[i * 2 + 1]);
      // the rows of its own fold do not see it either
      for (let j = i % 3; j < p.n; j += 3) expect(flipped.oofOut[j * 2 + 1]).toBe(base.oofOut[j * 2 + 1]);
    }
    // the model's part: a stored row is not its own neighbour when k is chosen, and the part predicts from stored rows only
    const part = knnPart(base, p.n, p.F, p.y, DEFAULT_KNN_OPTIONS, 0.5);
    const out = predictKnn(part, p.X, p.n, p.F);
    for (let i = 0; i < p.n; i++) {
      expect(out[i * 2] + out[i * 2 + 1]).toBeCloseTo(1, 12);
      expect(out[i * 2 + 1]).toBeGreaterThanOrEqual(0);
      expect(out[i * 2 + 1]).toBeLessThanOrEqual(1);
    }
  });

  it('keeps the member where it pays, deterministically, and round-trips through a format-5 artefact bit for bit', () => {
    const rows = ballRows(400, 9);
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '17.0.0' as const, config: { ...FAST, maxRounds: 8 } };
    const a = trainTabular(rows, options).model;
    expect(a.knn).toBeDefined();
    expect(a.knn?.n).toBe(400);
    expect(a.knn?.weight).toBeGreaterThan(0);
    const text = serialiseModel(a);
    expect(JSON.parse(text).formatVersion).toBe(5);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    const back = loadModel(text);
    expect(back.engine).toEqual({ id: 'tabular-gbdt', version: '17.0.0' });
    expect(serialiseModel(back)).toBe(text);
    const query = ballRows(50, 10);
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
    // without the member the model predicts otherwise (the part is used)
    expect(predictRows({ ...back, knn: undefined }, query)).not.toEqual(predictRows(a, query));
    // a damaged part is refused
    const o = JSON.parse(text);
    o.knn.n = 399;
    expect(() => loadModel(JSON.stringify(o))).toThrow(/kNN part/);
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-5 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('17.0.0', kind, 5, FAST);
  });

  it('stays trainable by name in format 5 and servable after 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('17.0.0');
    expect(canServe('tabular-gbdt', '17.0.0')).toBe(true);
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '17.0.0' }).model.engine.version).toBe('17.0.0');
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
