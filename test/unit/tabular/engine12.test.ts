import { serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { fitBins, transformBins, type BinnedFeatureInfo } from '../../../engines/tabular/binning';
import { makeLoss } from '../../../engines/tabular/loss';
import { categoryRuleFor, prepare, resolveConfigV12, type Prepared } from '../../../engines/tabular/pipeline';
import { predictRaw } from '../../../engines/tabular/predictor';
import { boostPooled, fitCore, makeFolds, takeRows, type EngineConfig, type EngineConfigOverride, type FoldSet } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** A regression's data prepared by 12.0.0, split into `k` folds as a cross-fit would, with its configuration. */
function regressionFolds(n: number, seed: number, k: number, cfg: Partial<EngineConfig>): { p: Prepared; info: BinnedFeatureInfo; folds: FoldSet[]; cfg: EngineConfig } {
  const p = prepare(signalRows(n, seed, 'regression'), 'target', 'regression', categoryRuleFor('12.0.0'));
  const config: EngineConfig = { ...resolveConfigV12(p), ...cfg };
  const info = fitBins(p.X, p.n, p.F, p.categorical, config.maxBins, 3);
  const bins = transformBins(info, p.X, p.n, p.F);
  const foldOf = makeFolds(p.y, k, seed, 0);
  const folds = Array.from({ length: k }, (_, m): FoldSet => {
    const tr = Int32Array.from({ length: p.n }, (_, i) => i).filter((i) => foldOf[i] !== m);
    const va = Int32Array.from({ length: p.n }, (_, i) => i).filter((i) => foldOf[i] === m);
    const ytr = Float64Array.from(tr, (i) => p.y[i]);
    return {
      train: { bins: takeRows(bins, p.F, tr), n: tr.length, y: ytr },
      valid: { bins: takeRows(bins, p.F, va), n: va.length, y: Float64Array.from(va, (i) => p.y[i]) },
      validRows: va,
      loss: makeLoss('squared_error', 0, ytr),
      params: { grower: config.grower, learningRate: config.learningRate, maxRounds: config.maxRounds, subsample: config.subsample, colsample: config.colsample, seed: 40 + m },
    };
  });
  return { p, info, folds, cfg: config };
}

describe('pooled stopping: a cross-fit\'s fold models stopped together', () => {
  it('keeps, for every fold model, the round of least loss over all held-out rows, and stops a patience later', () => {
    const { p, info, folds, cfg } = regressionFolds(400, 31, 4, { earlyStoppingRounds: 8, earlyStoppingMinDelta: 0, maxRounds: 400 });
    const results = boostPooled(folds, info, p.F, cfg);
    // the pooled loss per round, from each fold's own held-out losses weighted by its rows
    const grown = results[0].validHistory.length;
    const held = folds.reduce((s, f) => s + (f.valid?.n ?? 0), 0);
    const pooled = Array.from({ length: grown }, (_, r) => results.reduce((s, res, m) => s + res.validHistory[r] * (folds[m].valid?.n ?? 0), 0) / held);
    const best = pooled.indexOf(Math.min(...pooled)) + 1;
    expect(grown).toBe(best + cfg.earlyStoppingRounds);
    for (const res of results) {
      expect(res.validHistory).toHaveLength(grown);
      expect(res.rounds).toBe(best);
    }
    // each fold model's held-out scores are those of its kept rounds
    results.forEach((res, m) => {
      const va = folds[m].validRows;
      const again = predictRaw(res.predictor, takeRows(p.X, p.F, va), va.length);
      again.forEach((v, j) => expect(v).toBeCloseTo((res.validRaw as Float64Array)[j], 9));
    });
    // alone, each fold would have stopped at its own minimum: here they do not all agree
    const alone = results.map((res) => res.validHistory.slice(0, grown).indexOf(Math.min(...res.validHistory.slice(0, grown))) + 1);
    expect(new Set(alone).size).toBeGreaterThan(1);
  });

  it('gives every fold model of a 12.0.0 regression one round count, where 11.0.0 stops each on its own', () => {
    const p = prepare(signalRows(600, 33, 'regression'), 'target', 'regression', categoryRuleFor('12.0.0'));
    const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
    const pooled = fitCore(input, resolveConfigV12(p), 3);
    expect(new Set(pooled.foldModels.map((f) => f.rounds)).size).toBe(1);
    const own = fitCore(input, { ...resolveConfigV12(p), stopping: 'fold' }, 3);
    expect(new Set(own.foldModels.map((f) => f.rounds)).size).toBeGreaterThan(1);
  });
});

describe('engine 12: 11.0.0 with pooled stopping for regressions on small data', () => {
  it('trains exactly 11.0.0\'s model, but for its version, on classification and on regressions above small data', () => {
    const cases = [['binary', 300], ['multiclass', 300], ['regression', 2100]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v11 = trainTabular(rows, { ...options, engineVersion: '11.0.0' }).model;
      const v12 = trainTabular(rows, { ...options, engineVersion: '12.0.0' }).model;
      expect(serialiseModel(v12)).toBe(serialiseModel({ ...v11, engine: { ...v11.engine, version: '12.0.0' } }));
    }
  });

  it('trains another model than 11.0.0 on a regression of small data, its fold models stopped together', () => {
    const rows = signalRows(300, 14, 'regression');
    const options = { target: 'target', task: 'regression' as const, seed: 2 };
    const v11 = trainTabular(rows, { ...options, engineVersion: '11.0.0' }).model;
    const v12 = trainTabular(rows, { ...options, engineVersion: '12.0.0' }).model;
    expect(serialiseModel(v12)).not.toBe(serialiseModel({ ...v11, engine: { ...v11.engine, version: '12.0.0' } }));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('is deterministic for a seed and round-trips a %s model through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('12.0.0', kind, 4, FAST);
  });

  it('stays trainable by name in format 4 and servable after 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '12.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('12.0.0');
    expect(model.formatVersion).toBe(4);
    expect(canServe('tabular-gbdt', '12.0.0')).toBe(true);
  });
});
