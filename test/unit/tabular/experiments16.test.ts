import { serialiseModel, trainTabular } from '../../../engines/tabular/index';
import { fitForest } from '../../../engines/tabular/forest';
import { basisMatrix, fitBasis, fitLinear, stackWeights, DEFAULT_LINEAR_OPTIONS } from '../../../engines/tabular/linear';
import { addForestMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { makeFolds, type EngineConfigOverride } from '../../../engines/tabular/train';
import { Prng } from '../../../engines/tabular/prng';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 60, folds: 3, models: 3 };

/**
 * The sixteenth round's experiment options (bench/RESULTS.md, engine 15.0.0, "Tried and not kept"): a
 * model refitted on all rows (EngineConfig.refit, refitRounds), the trees and the linear member stacked by
 * a logistic regression (LinearOptions.blendBy 'stack'), out-of-fold scores averaged over a repeated
 * cross-fit (EngineConfig.repeats, for the linear and forest members) and forests whose small nodes are
 * leaves (ForestOptions.minSplit). No version sets them; unset, every version trains as before.
 */
describe('the sixteenth round\'s experiment options', () => {
  it('change nothing when not set (14.0.0 with the options spelled out as their defaults)', () => {
    const rows = signalRows(300, 3, 'binary');
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '14.0.0' as const };
    const plain = trainTabular(rows, { ...options, config: FAST }).model;
    const spelled = trainTabular(rows, { ...options, config: { ...FAST, refit: 0, repeats: 1, forest: { minSplit: 2 } } }).model;
    expect(serialiseModel(spelled)).toBe(serialiseModel(plain));
  });

  it('refit: one more tree set on all rows in the predictor, the out-of-fold scores the fold models\' alone', () => {
    const p = prepare(signalRows(300, 5, 'binary'), 'target', 'classification', categoryRuleFor('14.0.0'));
    const plain = trainPrepared(p, { engineVersion: '14.0.0', seed: 2, config: FAST });
    const refit = trainPrepared(p, { engineVersion: '14.0.0', seed: 2, config: { ...FAST, refit: 0.5 } });
    expect(Array.from(refit.core.oofRaw)).toEqual(Array.from(plain.core.oofRaw));
    expect(refit.core.foldModels.map((f) => f.rounds)).toEqual(plain.core.foldModels.map((f) => f.rounds));
    // the refit's trees: as many rounds as the fold models' mean (one tree a round on binary data)
    const meanRounds = Math.round(plain.core.foldModels.reduce((s, f) => s + f.rounds, 0) / plain.core.foldModels.length);
    expect(refit.core.predictor.treeRoot.length).toBe(plain.core.predictor.treeRoot.length + meanRounds);
    const longer = trainPrepared(p, { engineVersion: '14.0.0', seed: 2, config: { ...FAST, refit: 0.5, refitRounds: 1.5 } });
    expect(longer.core.predictor.treeRoot.length).toBe(plain.core.predictor.treeRoot.length + Math.round(meanRounds * 1.5));
  });

  it('stackWeights: recovers the logistic regression of the target on two scores', () => {
    const rng = new Prng(8);
    const n = 4000;
    const t = new Float64Array(n);
    const l = new Float64Array(n);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      t[i] = rng.nextFloat() * 4 - 2;
      l[i] = rng.nextFloat() * 4 - 2;
      y[i] = rng.nextFloat() < 1 / (1 + Math.exp(-(0.5 + 1.5 * t[i] + 0.7 * l[i]))) ? 1 : 0;
    }
    const st = stackWeights(t, l, y, 0);
    expect(st).not.toBeNull();
    expect(st?.a).toBeCloseTo(1.5, 0);
    expect(st?.b).toBeCloseTo(0.7, 0);
    expect(st?.c).toBeCloseTo(0.5, 0);
    // rows without both scores are left out
    t[0] = NaN;
    expect(stackWeights(t, l, y, 0)).not.toBeNull();
  });

  it('stack: the linear part carries the stacked weights, and the model is deterministic', () => {
    const rows = signalRows(300, 6, 'binary');
    const options = { target: 'target', task: 'classification' as const, seed: 3, engineVersion: '14.0.0' as const, config: { ...FAST, linear: { blendBy: 'stack' as const } } };
    const a = trainTabular(rows, options).model;
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(serialiseModel(a));
    if (a.linear) {
      expect(a.linear.treeWeight).toBeGreaterThan(0);
      expect(a.linear.linearWeight).toBeGreaterThan(0);
    }
  });

  it('repeats: the linear member\'s out-of-fold scores of a row held out twice are the mean of its two fits', () => {
    const p = prepare(signalRows(200, 7, 'binary'), 'target', 'classification', categoryRuleFor('14.0.0'));
    const basis = fitBasis(p.X, p.n, p.F, p.categorical, DEFAULT_LINEAR_OPTIONS.hinges);
    const D = basis.termFeature.length;
    const Z = basisMatrix(basis, p.X, p.n, p.F);
    const foldsOf = (seed: number): Int32Array[] => {
      const fold = makeFolds(p.y, 3, seed, 2);
      return [0, 1, 2].map((m) => Int32Array.from(Array.from(fold.keys()).filter((i) => fold[i] === m)));
    };
    const opts = { ...DEFAULT_LINEAR_OPTIONS, alphas: [0.01] };
    const first = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, foldsOf(1), opts);
    const second = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, foldsOf(2), opts);
    const both = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, [...foldsOf(1), ...foldsOf(2)], opts);
    expect(first && second && both).toBeTruthy();
    for (let i = 0; i < p.n; i++) expect(both?.oofRaw[i]).toBeCloseTo(((first?.oofRaw[i] as number) + (second?.oofRaw[i] as number)) / 2, 12);
  });

  it('repeats: the forest member\'s out-of-fold outputs are averaged over the repeated folds, and a probability', () => {
    const p = prepare(signalRows(200, 9, 'binary'), 'target', 'classification', categoryRuleFor('14.0.0'));
    const r = trainPrepared(p, { engineVersion: '14.0.0', seed: 1, config: { ...FAST, repeats: 2 } });
    expect(r.core.foldModels).toHaveLength(6);
    const forest = addForestMember(p, r.core, 1, undefined, '9.0.0');
    const out = forest.oofOut as Float64Array;
    for (let i = 0; i < p.n; i++) {
      expect(out[i * 2] + out[i * 2 + 1]).toBeCloseTo(1, 12);
      expect(out[i * 2 + 1]).toBeGreaterThanOrEqual(0);
      expect(out[i * 2 + 1]).toBeLessThanOrEqual(1);
    }
  });

  it('minSplit: nodes of fewer rows become leaves (fewer nodes), 2 is the forest grown to purity', () => {
    const p = prepare(signalRows(300, 10, 'binary'), 'target', 'classification', categoryRuleFor('14.0.0'));
    const all = Int32Array.from({ length: p.n }, (_, i) => i);
    const pure = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 10, 3);
    const same = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 10, 3, 2);
    expect(Array.from(same.feature)).toEqual(Array.from(pure.feature));
    expect(Array.from(same.leafValue)).toEqual(Array.from(pure.leafValue));
    const coarse = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 10, 3, 10);
    expect(coarse.feature.length).toBeLessThan(pure.feature.length);
  });
});
