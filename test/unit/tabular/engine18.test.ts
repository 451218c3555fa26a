import { serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, forestOverrideFor, groupOptionsFor, knnOptionsFor, prepare, resolveConfigV14, resolveConfigV18, V18_REGRESSION_LEARNING_RATE, ENGINE_VERSIONS, type Prepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/**
 * Engine 18.0.0 (bench/RESULTS.md, twenty-third round of issue 15): 17.0.0 whose regressions above small
 * data boost at a learning rate of 0.15 instead of 0.1; every other data shape trains 17.0.0's model.
 */
describe('engine 18: 17.0.0 with a learning rate of 0.15 on regressions above small data', () => {
  it('changes only the learning rate, and only of regressions above small data', () => {
    expect(V18_REGRESSION_LEARNING_RATE).toBe(0.15);
    expect(ENGINE_VERSIONS).toContain('18.0.0');
    const shapes = [
      { task: 'regression', n: 2400, F: 8, nClasses: 0 },
      { task: 'regression', n: 2000, F: 8, nClasses: 0 },
      { task: 'binary', n: 5000, F: 8, nClasses: 2 },
      { task: 'multiclass', n: 5000, F: 8, nClasses: 5 },
      { task: 'binary', n: 300, F: 8, nClasses: 2 },
    ] as Prepared[];
    for (const p of shapes) {
      const v14 = resolveConfigV14(p);
      const v18 = resolveConfigV18(p);
      const above = p.task === 'regression' && p.n > 2000;
      expect(v18).toEqual(above ? { ...v14, learningRate: V18_REGRESSION_LEARNING_RATE } : v14);
      // the patience stays 20 rounds (17.0.0's above small data)
      if (above) expect(v18.earlyStoppingRounds).toBe(v14.earlyStoppingRounds);
      // an override applies on top
      expect(resolveConfigV18(p, { learningRate: 0.3 }).learningRate).toBe(0.3);
      expect(forestOverrideFor('18.0.0', p)).toEqual(forestOverrideFor('17.0.0', p));
    }
    expect(knnOptionsFor('18.0.0')).toEqual(knnOptionsFor('17.0.0'));
    expect(groupOptionsFor('18.0.0')).toEqual(groupOptionsFor('17.0.0'));
    expect(categoryRuleFor('18.0.0')).toBe(categoryRuleFor('17.0.0'));
  });

  it('trains 17.0.0\'s model, but for its version, on classification and small regressions', () => {
    const cases = [['multiclass', 600], ['regression', 600], ['binary', 2400], ['binary', 300]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v17 = trainTabular(rows, { ...options, engineVersion: '17.0.0' }).model;
      const v18 = trainTabular(rows, { ...options, engineVersion: '18.0.0' }).model;
      expect(v18.formatVersion).toBe(5);
      expect(serialiseModel(v18)).toBe(serialiseModel({ ...v17, engine: { ...v17.engine, version: '18.0.0' } }));
    }
  });

  it('trains 17.0.0 at a learning rate of 0.15 on a regression above small data', () => {
    const rows = signalRows(2600, 15, 'regression');
    const options = { target: 'target', task: 'regression' as const, seed: 3 };
    const v18 = trainTabular(rows, { ...options, config: FAST, engineVersion: '18.0.0' }).model;
    const v17 = trainTabular(rows, { ...options, config: { ...FAST, learningRate: 0.15 }, engineVersion: '17.0.0' }).model;
    const plain = trainTabular(rows, { ...options, config: FAST, engineVersion: '17.0.0' }).model;
    expect(serialiseModel(v18)).toBe(serialiseModel({ ...v17, engine: { ...v17.engine, version: '18.0.0' } }));
    expect(serialiseModel(v18)).not.toBe(serialiseModel({ ...plain, engine: { ...plain.engine, version: '18.0.0' } }));
    // the data are above small data: prepared rows count more than 2,000
    expect(prepare(rows, 'target', 'regression', categoryRuleFor('18.0.0')).n).toBeGreaterThan(2000);
  });

  it('stays trainable by name in format 5 and servable after 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('18.0.0');
    expect(canServe('tabular-gbdt', '18.0.0')).toBe(true);
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '18.0.0' }).model.engine.version).toBe('18.0.0');
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
