import { loadModel, predictRows, serialiseModel, type Row } from '../../../engines/tabular/index';
import { addLinearMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { rocAuc } from '../../../engines/tabular/metrics';
import { bootstrapGain } from '../../../engines/tabular/knn';
import { fitCore, type EngineConfigOverride } from '../../../engines/tabular/train';
import { resolveConfigV14 } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 30, folds: 3, models: 3 };

/** A smooth, local binary target (a product of sines) on 6 numeric columns, where a kNN member gains. */
function sineRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  return Array.from({ length: n }, () => {
    const x = Array.from({ length: 6 }, () => rng.nextFloat() * 2 - 1);
    const row: Record<string, unknown> = { target: Math.sin(3 * x[0]) * Math.sin(3 * x[1]) + 0.2 * (rng.nextFloat() - 0.5) > 0 ? 'in' : 'out' };
    x.forEach((v, j) => (row[`x${j}`] = v));
    return row as Row;
  });
}

/** The twenty-first round's experiment options (bench/RESULTS.md): no engine version sets them. */
describe('round 21 experiments: bagged fold models, a bootstrap gate on the kNN member, the linear blend by ROC AUC', () => {
  it('EngineConfig.bags: 1 is the model without it; more average models of other seeds on the same folds, deterministically', () => {
    const p = prepare(signalRows(300, 5), 'target', 'classification', categoryRuleFor('17.0.0'));
    const plain = serialiseModel(trainPrepared(p, { engineVersion: '17.0.0', seed: 3, config: FAST }).model);
    expect(serialiseModel(trainPrepared(p, { engineVersion: '17.0.0', seed: 3, config: { ...FAST, bags: 1 } }).model)).toBe(plain);
    const bagged = trainPrepared(p, { engineVersion: '17.0.0', seed: 3, config: { ...FAST, bags: 3 } });
    expect(serialiseModel(bagged.model)).not.toBe(plain);
    expect(serialiseModel(trainPrepared(p, { engineVersion: '17.0.0', seed: 3, config: { ...FAST, bags: 3 } }).model)).toBe(serialiseModel(bagged.model));
    // the same folds; each fold model holds more trees than one model
    const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
    const one = fitCore(input, resolveConfigV14(p, FAST), 3);
    const three = fitCore(input, resolveConfigV14(p, { ...FAST, bags: 3 }), 3);
    expect(three.foldModels.map((f) => Array.from(f.validRows))).toEqual(one.foldModels.map((f) => Array.from(f.validRows)));
    three.foldModels.forEach((f, m) => expect(f.predictor.treeRoot.length).toBeGreaterThan(one.foldModels[m].predictor.treeRoot.length));
    // every held-out row has a finite averaged score
    for (let i = 0; i < p.n; i++) expect(Number.isFinite(three.oofRaw[i])).toBe(true);
    // served through an artefact round trip with the same predictions
    const rows = signalRows(20, 6);
    const back = loadModel(serialiseModel(bagged.model));
    expect(predictRows(back, rows)).toEqual(predictRows(bagged.model, rows));
  });

  it('bootstrapGain: no gain for identical scores, a sure gain for a perfect score, deterministic', () => {
    const rng = new Prng(9);
    const n = 300;
    const y = Float64Array.from({ length: n }, () => (rng.nextFloat() < 0.4 ? 1 : 0));
    const model = Float64Array.from(y, (v) => 0.5 * v + rng.nextFloat());
    const perfect = Float64Array.from(y, (v) => v + 0.01 * rng.nextFloat());
    expect(bootstrapGain(y, model, model, 100).noGain).toBe(1);
    const sure = bootstrapGain(y, model, perfect, 100);
    expect(sure.noGain).toBe(0);
    expect(sure.sd).toBeGreaterThan(0);
    expect(bootstrapGain(y, model, perfect, 100)).toEqual(sure);
    const noise = Float64Array.from(model, (v) => v + 0.05 * rng.nextFloat());
    const unsure = bootstrapGain(y, model, noise, 200).noGain;
    expect(unsure).toBeGreaterThan(0.05);
    expect(unsure).toBeLessThan(1);
  });

  it('KnnOptions.bootstrap: alpha 1 keeps what the gain gate keeps; alpha 0 keeps the member only where no resample lacks a gain', () => {
    const p = prepare(sineRows(400, 2), 'target', 'classification', categoryRuleFor('17.0.0'));
    const base = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0 } } });
    const loose = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0, bootstrap: { draws: 50, alpha: 1 } } } });
    expect(base.model.knn).toBeDefined();
    expect(serialiseModel(loose.model)).toBe(serialiseModel(base.model));
    expect(loose.knn?.noGain).toBeGreaterThanOrEqual(0);
    expect(loose.knn?.noGain).toBeLessThanOrEqual(1);
    const strict = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0, bootstrap: { draws: 50, alpha: 0 } } } });
    expect(strict.knn?.noGain).toBe(loose.knn?.noGain);
    expect(strict.model.knn !== undefined).toBe(loose.knn?.noGain === 0);
  });

  it('LinearOptions.blendBy roc_auc (binary): a weight of the grid, summing to one, never below the trees\' out-of-fold ROC AUC', () => {
    const p = prepare(signalRows(240, 7), 'target', 'classification', categoryRuleFor('5.0.0'));
    const r = trainPrepared(p, { engineVersion: '5.0.0', seed: 1, config: FAST });
    const lin = addLinearMember(p, r.core, { blendBy: 'roc_auc' });
    const w = lin.weights as Float64Array;
    expect(w[0] + w[1]).toBeCloseTo(1, 12);
    expect(Math.round(w[1] * 20)).toBeCloseTo(w[1] * 20, 9);
    expect(w[1]).toBeGreaterThanOrEqual(0);
    const held = [...Array(p.n).keys()].filter((i) => !Number.isNaN(r.core.oofRaw[i]));
    const yh = Float64Array.from(held, (i) => p.y[i]);
    const auc = (o: Float64Array): number => rocAuc(yh, Float64Array.from(held, (i) => o[i]));
    expect(auc(lin.core.oofRaw)).toBeGreaterThanOrEqual(auc(r.core.oofRaw) - 1e-12);
    // the default blend (by log loss) is untouched by the option's absence
    expect(addLinearMember(p, r.core).weights).toEqual(addLinearMember(p, r.core, {}).weights);
  });

  it('KnnOptions.cvGain: a gain of the mixture weighed fold by fold on the other folds; -1 keeps what the gain gate keeps, 1 drops the member', () => {
    const p = prepare(sineRows(400, 2), 'target', 'classification', categoryRuleFor('17.0.0'));
    const base = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0 } } });
    const loose = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0, cvGain: -1 } } });
    expect(base.model.knn).toBeDefined();
    expect(serialiseModel(loose.model)).toBe(serialiseModel(base.model));
    const cv = loose.knn?.cvGain as number;
    expect(Number.isFinite(cv)).toBe(true);
    // on a local target the member's gain holds out of sample
    expect(cv).toBeGreaterThan(0);
    const strict = trainPrepared(p, { engineVersion: '17.0.0', seed: 1, config: { ...FAST, knn: { minGain: 0, cvGain: 1 } } });
    expect(strict.knn?.cvGain).toBe(cv);
    expect(strict.model.knn).toBeUndefined();
  });
});
