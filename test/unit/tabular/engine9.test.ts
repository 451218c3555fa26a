import { serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { DEFAULT_FOREST_OPTIONS, forestOptions, mixWeight } from '../../../engines/tabular/forest';
import { rocAuc } from '../../../engines/tabular/metrics';
import { addForestMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import { rawToOutput, type EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, noisyProbabilities, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };
const GRID = Array.from({ length: 21 }, (_, s) => s / 20);

/** ROC AUC of (1 - w) * model + w * forest (n x 2 probabilities) over the rows where both are defined. */
function mixtureAuc(y: Float64Array, model: Float64Array, forest: Float64Array, w: number): number {
  const held = Array.from(y.keys()).filter((i) => !Number.isNaN(model[i * 2]) && !Number.isNaN(forest[i * 2]));
  return rocAuc(held.map((i) => y[i]), held.map((i) => (1 - w) * model[i * 2 + 1] + w * forest[i * 2 + 1]));
}

describe('the forest weight by out-of-fold ROC AUC (binary tasks of engine 9)', () => {
  it('picks the grid weight with the largest AUC on the held-out rows, never below the model or the forest alone', () => {
    const rng = new Prng(21);
    const n = 400;
    const y = Float64Array.from({ length: n }, () => (rng.nextFloat() < 0.3 ? 1 : 0));
    const model = noisyProbabilities(y, 0.1, 0.6, rng, (i) => i % 11 === 0);
    const forest = noisyProbabilities(y, 0.1, 0.8, rng, (i) => i % 7 === 0);
    const mix = mixWeight('binary', y, model, forest, 2, 'roc_auc');
    const best = mixtureAuc(y, model, forest, mix.weight);
    expect(mix.loss).toBeCloseTo(1 - best, 12);
    for (const w of GRID) expect(best).toBeGreaterThanOrEqual(mixtureAuc(y, model, forest, w));
    expect(mix.weight).toBeGreaterThan(0);
    expect(mix.weight).toBeLessThan(1);
  });

  it('keeps the smaller weight on ties and gives no weight when the held-out rows hold one class', () => {
    const rng = new Prng(5);
    const y = Float64Array.from({ length: 100 }, (_, i) => i % 2);
    const model = noisyProbabilities(y, 0.1, 0.9, rng);
    // a forest that ranks the rows exactly as the model does: every weight has the same AUC
    expect(mixWeight('binary', y, model, Float64Array.from(model), 2, 'roc_auc').weight).toBe(0);
    // a forest that ranks them perfectly: the smallest weight that reaches AUC 1, no larger
    const perfect = Float64Array.from({ length: 200 }, (_, j) => (j % 2 === y[j >> 1] ? 0.9 : 0.1));
    const mix = mixWeight('binary', y, model, perfect, 2, 'roc_auc');
    expect(mixtureAuc(y, model, perfect, mix.weight)).toBe(1);
    expect(mix.weight).toBeGreaterThan(0);
    expect(mixtureAuc(y, model, perfect, mix.weight - 0.05)).toBeLessThan(1);
    const oneClass = new Float64Array(100);
    expect(mixWeight('binary', oneClass, model, perfect, 2, 'roc_auc').weight).toBe(0);
  });
});

describe('engine 9: 8.0.0 with the classification forest weighed by full-size fold forests, binary by AUC', () => {
  it('sets its forest apart from 8.0.0\'s on classification only', () => {
    expect(forestOptions('8.0.0', 'binary')).toEqual(DEFAULT_FOREST_OPTIONS);
    expect(forestOptions('9.0.0', 'regression')).toEqual(DEFAULT_FOREST_OPTIONS);
    for (const task of ['binary', 'multiclass'] as const) {
      expect(forestOptions('9.0.0', task)).toEqual({ ...DEFAULT_FOREST_OPTIONS, foldTrees: DEFAULT_FOREST_OPTIONS.trees, binaryWeightBy: 'roc_auc' });
    }
  });

  it('scores a binary forest out of fold with as many trees as it keeps, and weighs it by the best out-of-fold AUC', () => {
    const p = prepare(signalRows(240, 31, 'binary'), 'target', 'classification', categoryRuleFor('7.0.0'));
    const core = trainPrepared(p, { engineVersion: '7.0.0', seed: 2, config: FAST }).core;
    const v9 = addForestMember(p, core, 2, undefined, '9.0.0');
    const v8 = addForestMember(p, core, 2, undefined, '8.0.0');
    // trees grown to purity vote one class each: a forest's probabilities are counts over its trees
    const votes = (oof: Float64Array, trees: number): number[] => Array.from(p.y.keys(), (i) => oof[i * 2 + 1] * trees);
    const v9Votes = votes(v9.oofOut as Float64Array, DEFAULT_FOREST_OPTIONS.trees);
    for (const v of v9Votes) expect(Math.abs(v - Math.round(v))).toBeLessThan(1e-9);
    expect(v9Votes.some((v) => Math.round(v) % 2 === 1)).toBe(true);
    for (const v of votes(v8.oofOut as Float64Array, DEFAULT_FOREST_OPTIONS.foldTrees)) expect(Math.abs(v - Math.round(v))).toBeLessThan(1e-9);
    const model = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
    const chosen = mixtureAuc(p.y, model, v9.oofOut as Float64Array, v9.weight as number);
    for (const w of GRID) expect(chosen).toBeGreaterThanOrEqual(mixtureAuc(p.y, model, v9.oofOut as Float64Array, w));
  });

  it('trains exactly 8.0.0\'s model on a regression, but for its version', () => {
    const rows = signalRows(300, 14, 'regression');
    const options = { target: 'target', task: 'regression' as const, seed: 2, config: FAST };
    const v8 = trainTabular(rows, { ...options, engineVersion: '8.0.0' }).model;
    const v9 = trainTabular(rows, { ...options, engineVersion: '9.0.0' }).model;
    expect(v9.forest).toBeDefined();
    expect(serialiseModel(v9)).toBe(serialiseModel({ ...v8, engine: { ...v8.engine, version: '9.0.0' } }));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-3 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('9.0.0', kind, 3, FAST);
  });

  it('stays servable and trainable by name after 10.0.0, 11.0.0, 12.0.0, 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0 and 18.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '9.0.0' }).model.engine.version).toBe('9.0.0');
    expect(canServe('tabular-gbdt', '9.0.0')).toBe(true);
  });
});
