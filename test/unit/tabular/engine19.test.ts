import { serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, forestOverrideFor, groupOptionsFor, knnOptionsFor, prepare, resolveConfigV18, resolveConfigV19, V14_CLASSIFICATION_L2, V19_CLASSIFICATION_SYMMETRIC_L2, ENGINE_VERSIONS, type Prepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/**
 * Engine 19.0.0 (bench/RESULTS.md, twenty-fifth round of issue 15): 18.0.0 whose classification trees above
 * small data grow their symmetric rounds with an L2 of 3/4 instead of 3 (14.0.0's scaling of the leaf-wise
 * trees' L2 by a log-loss row's largest hessian, 1/4); every other data shape trains 18.0.0's model.
 */
describe('engine 19: 18.0.0 with the symmetric rounds\' L2 at 3/4 on classification above small data', () => {
  it('changes only the symmetric rounds\' L2, and only of classification above small data', () => {
    expect(V19_CLASSIFICATION_SYMMETRIC_L2).toBe(0.75);
    // 4.0.0's L2 of 3 scaled as 14.0.0 scaled the leaf-wise trees' 1
    expect(V19_CLASSIFICATION_SYMMETRIC_L2).toBe(3 * V14_CLASSIFICATION_L2);
    expect(ENGINE_VERSIONS).toContain('19.0.0');
    const shapes = [
      { task: 'binary', n: 5000, F: 8, nClasses: 2 },
      { task: 'binary', n: 2001, F: 8, nClasses: 2 },
      { task: 'multiclass', n: 800, F: 8, nClasses: 5 },
      { task: 'binary', n: 2000, F: 8, nClasses: 2 },
      { task: 'multiclass', n: 400, F: 8, nClasses: 5 },
      { task: 'regression', n: 5000, F: 8, nClasses: 0 },
      { task: 'regression', n: 300, F: 8, nClasses: 0 },
    ] as Prepared[];
    for (const p of shapes) {
      const v18 = resolveConfigV18(p);
      const v19 = resolveConfigV19(p);
      const above = p.task !== 'regression' && (p.task === 'multiclass' ? p.n * p.nClasses : p.n) > 2000;
      expect(v18.grower.symmetricHybridL2).toBe(3);
      expect(v19).toEqual(above ? { ...v18, grower: { ...v18.grower, symmetricHybridL2: V19_CLASSIFICATION_SYMMETRIC_L2 } } : v18);
      // the leaf-wise trees keep 18.0.0's L2 (14.0.0's 1/4 above small data, 1 on small data)
      expect(v19.grower.lambdaL2).toBe(v18.grower.lambdaL2);
      // an override applies on top
      expect(resolveConfigV19(p, { grower: { symmetricHybridL2: 2 } }).grower.symmetricHybridL2).toBe(2);
      expect(forestOverrideFor('19.0.0', p)).toEqual(forestOverrideFor('18.0.0', p));
    }
    expect(knnOptionsFor('19.0.0')).toEqual(knnOptionsFor('18.0.0'));
    expect(groupOptionsFor('19.0.0')).toEqual(groupOptionsFor('18.0.0'));
    expect(categoryRuleFor('19.0.0')).toBe(categoryRuleFor('18.0.0'));
  });

  it('trains 18.0.0\'s model, but for its version, on regressions and small classification', () => {
    const cases = [['multiclass', 300], ['regression', 600], ['regression', 2400], ['binary', 1800]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v18 = trainTabular(rows, { ...options, engineVersion: '18.0.0' }).model;
      const v19 = trainTabular(rows, { ...options, engineVersion: '19.0.0' }).model;
      expect(v19.formatVersion).toBe(5);
      expect(serialiseModel(v19)).toBe(serialiseModel({ ...v18, engine: { ...v18.engine, version: '19.0.0' } }));
    }
  });

  it('trains 18.0.0 with a symmetric L2 of 3/4 on classification above small data', () => {
    for (const [kind, n] of [['binary', 2600], ['multiclass', 900]] as const) {
      const rows = signalRows(n, 15, kind);
      const options = { target: 'target', task: 'classification' as const, seed: 3 };
      // no forest member, so that the binary case stays small and quick (the forest is 18.0.0's)
      const config: EngineConfigOverride = { ...FAST, forest: { maxRows: 0 } };
      const v19 = trainTabular(rows, { ...options, config, engineVersion: '19.0.0' }).model;
      const v18 = trainTabular(rows, { ...options, config: { ...config, grower: { symmetricHybridL2: 0.75 } }, engineVersion: '18.0.0' }).model;
      const plain = trainTabular(rows, { ...options, config, engineVersion: '18.0.0' }).model;
      expect(serialiseModel(v19)).toBe(serialiseModel({ ...v18, engine: { ...v18.engine, version: '19.0.0' } }));
      expect(serialiseModel(v19)).not.toBe(serialiseModel({ ...plain, engine: { ...plain.engine, version: '19.0.0' } }));
      // the data are above small data: prepared row-outputs count more than 2,000
      const p = prepare(rows, 'target', 'classification', categoryRuleFor('19.0.0'));
      expect(p.task === 'multiclass' ? p.n * p.nClasses : p.n).toBeGreaterThan(2000);
    }
  });

  it('is the version new models get, writes format 5 and is servable', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('19.0.0');
    expect(canServe('tabular-gbdt', '19.0.0')).toBe(true);
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST }).model.engine.version).toBe('19.0.0');
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
