import { predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { DEFAULT_FOREST_OPTIONS, fitForest, mixWeight, predictForest } from '../../../engines/tabular/forest';
import { encodeForModel } from '../../../engines/tabular/model';
import { addForestMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { deserialise, serialise } from '../../../engines/tabular/serialise';
import { Prng } from '../../../engines/tabular/prng';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, noisyProbabilities, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };
const allRows = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => i);

describe('the forest member (extremely randomised trees)', () => {
  it('is deterministic for a seed, and its class outputs are probabilities that sum to one', () => {
    const p = prepare(signalRows(200, 1, 'multiclass'), 'target', 'classification');
    const a = fitForest(p.X, p.F, p.y, p.task, p.nClasses, allRows(p.n), 10, 3);
    const b = fitForest(p.X, p.F, p.y, p.task, p.nClasses, allRows(p.n), 10, 3);
    const c = fitForest(p.X, p.F, p.y, p.task, p.nClasses, allRows(p.n), 10, 4);
    expect(b).toEqual(a);
    expect(c.threshold).not.toEqual(a.threshold);
    const out = predictForest(a, p.X, p.n, p.F);
    for (let i = 0; i < p.n; i++) {
      let sum = 0;
      for (let k = 0; k < p.nClasses; k++) {
        expect(out[i * p.nClasses + k]).toBeGreaterThanOrEqual(0);
        sum += out[i * p.nClasses + k];
      }
      expect(sum).toBeCloseTo(1, 12);
    }
  });

  it('grows its trees to purity: on its own training rows every tree gives each row its own class or value', () => {
    const p = prepare(signalRows(150, 2, 'regression'), 'target', 'regression');
    const forest = fitForest(p.X, p.F, p.y, p.task, p.nClasses, allRows(p.n), 5, 1);
    // rows with equal features and different targets cannot be told apart; signalRows has none
    const out = predictForest(forest, p.X, p.n, p.F);
    for (let i = 0; i < p.n; i++) expect(out[i]).toBeCloseTo(p.y[i], 9);
  });

  it('sends a missing value right at every cut, in training and in prediction alike', () => {
    // one feature: the class is 1 exactly where the value is missing
    const n = 60;
    const X = Float64Array.from({ length: n }, (_, i) => (i % 3 === 0 ? NaN : i));
    const y = Float64Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 1 : 0));
    const forest = fitForest(X, 1, y, 'binary', 2, allRows(n), 8, 5);
    const out = predictForest(forest, Float64Array.of(NaN, 7), 2, 1);
    expect(out[1]).toBe(1); // missing: class 1
    expect(out[3]).toBe(0); // present: class 0
  });

  it('is mixed in with a weight that is never worse out of fold than the model or the forest alone', () => {
    const rng = new Prng(9);
    const n = 300;
    const y = Float64Array.from({ length: n }, () => (rng.nextFloat() < 0.4 ? 1 : 0));
    const model = noisyProbabilities(y, 0.15, 0.5, rng);
    const forest = noisyProbabilities(y, 0.15, 0.7, rng);
    const lossAt = (w: number): number => {
      let loss = 0;
      for (let i = 0; i < n; i++) loss -= Math.log((1 - w) * model[i * 2 + y[i]] + w * forest[i * 2 + y[i]]);
      return loss / n;
    };
    const mix = mixWeight('binary', y, model, forest, 2);
    expect(mix.weight).toBeGreaterThanOrEqual(0);
    expect(mix.weight).toBeLessThanOrEqual(1);
    expect(mix.loss).toBeCloseTo(lossAt(mix.weight), 12);
    expect(mix.loss).toBeLessThanOrEqual(lossAt(0));
    expect(mix.loss).toBeLessThanOrEqual(lossAt(1));
    // a forest that is exactly right takes all the weight; one that is always wrong, none
    expect(mixWeight('regression', Float64Array.of(1, 2, 3), Float64Array.of(0, 0, 0), Float64Array.of(1, 2, 3), 1).weight).toBe(1);
    expect(mixWeight('regression', Float64Array.of(1, 2, 3), Float64Array.of(1, 2, 3), Float64Array.of(9, 9, 9), 1).weight).toBe(0);
  });

  it('scores each row out of fold with a forest that never saw its target', () => {
    const rows = signalRows(200, 3, 'regression');
    const p = prepare(rows, 'target', 'regression', categoryRuleFor('7.0.0'));
    const core = trainPrepared(p, { engineVersion: '7.0.0', seed: 1, config: FAST }).core;
    const before = addForestMember(p, core, 1).oofOut as Float64Array;
    // change the targets of the first fold's held-out rows: their own out-of-fold outputs must not move
    const held = core.foldModels[0].validRows;
    const y = Float64Array.from(p.y);
    for (const r of held) y[r] += 1000;
    const after = addForestMember({ ...p, y }, core, 1).oofOut as Float64Array;
    for (const r of held) expect(after[r]).toBe(before[r]);
    // while the other folds' rows, whose forests trained on the changed rows, do move
    const other = core.foldModels[1].validRows;
    expect(Array.from(other).some((r) => after[r] !== before[r])).toBe(true);
  });
});

describe('engine 8: 7.0.0 plus the forest member on data of at most 500 rows', () => {
  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-3 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('8.0.0', kind, 3, FAST);
  });

  it('keeps 7.0.0\'s trees and linear part and mixes in the forest where it gets weight', () => {
    const rows = signalRows(300, 14, 'regression');
    const options = { target: 'target', task: 'regression' as const, seed: 2, config: FAST };
    const v7 = trainTabular(rows, { ...options, engineVersion: '7.0.0' });
    const v8 = trainTabular(rows, { ...options, engineVersion: '8.0.0' });
    expect(v8.model.predictor).toEqual(v7.model.predictor);
    expect(v8.model.linear).toEqual(v7.model.linear);
    expect(v8.model.forest).toBeDefined();
    const forest = v8.model.forest!;
    expect(forest.weight).toBeGreaterThan(0);
    expect(forest.treeRoot.length).toBe(DEFAULT_FOREST_OPTIONS.trees);
    // the prediction is the mixture of 7.0.0's and the forest's
    const test = signalRows(20, 15, 'regression');
    const p7 = predictRows(v7.model, test).map((q) => q.prediction as number);
    const p8 = predictRows(v8.model, test).map((q) => q.prediction as number);
    const pf = predictForest(forest, encodeForModel(v8.model, test), test.length, v8.model.features.length);
    p8.forEach((v, i) => expect(v).toBeCloseTo((1 - forest.weight) * p7[i] + forest.weight * pf[i], 9));
  });

  it('trains 7.0.0\'s model, in format 3, above 500 rows', () => {
    const rows = signalRows(DEFAULT_FOREST_OPTIONS.maxRows + 1, 16, 'binary');
    const options = { target: 'target', seed: 3, config: FAST };
    const v7 = trainTabular(rows, { ...options, engineVersion: '7.0.0' });
    const v8 = trainTabular(rows, { ...options, engineVersion: '8.0.0' });
    expect(v8.model.forest).toBeUndefined();
    expect(serialiseModel(v8.model)).toBe(serialiseModel({ ...v7.model, engine: { ...v7.model.engine, version: '8.0.0' }, formatVersion: 3 }));
    expect(v8.validation).toEqual(v7.validation);
  });

  it('refuses an artefact whose forest points outside its arrays', () => {
    const model = trainTabular(signalRows(300, 14, 'regression'), { target: 'target', task: 'regression', seed: 2, engineVersion: '8.0.0', config: FAST }).model;
    expect(model.forest).toBeDefined();
    const forest = model.forest!;
    const broken = { ...model, forest: { ...forest, right: Int32Array.from(forest.right, (r, i) => (forest.feature[i] >= 0 ? forest.right.length + 5 : r)) } };
    expect(() => deserialise(serialise(broken))).toThrow(/bad forest part/);
  });

  it('stays servable and trainable by name after 9.0.0, 10.0.0, 11.0.0, 12.0.0, 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0 and 18.0.0 became the default, as does every earlier version', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(canServe('tabular-gbdt', '8.0.0')).toBe(true);
    for (const version of ['1.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0', '8.0.0'] as const) {
      expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: version }).model.engine.version).toBe(version);
    }
  });
});
