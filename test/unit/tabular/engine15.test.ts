import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, forestOverrideFor, groupOptionsFor, isSmallData, prepare, trainPrepared, V15_BINARY_FOREST_MAX_WORK, type Prepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** The fields of prepared data forestOverrideFor reads. */
function shape(task: Prepared['task'], n: number, F: number, nClasses = task === 'regression' ? 0 : 2): Prepared {
  return { task, n, F, nClasses } as Prepared;
}

/**
 * Engine 15.0.0 (bench/RESULTS.md, engine 15.0.0): 14.0.0 whose forest member is also fitted on binary
 * data above small data, within a compute budget; other data train 14.0.0's model.
 */
describe('engine 15: 14.0.0 with the forest member on binary data above small data', () => {
  it('gives the forest a row limit only on binary data above small data within the budget, and only in 15.0.0', () => {
    expect(V15_BINARY_FOREST_MAX_WORK).toBe(12000);
    // 4,300 rows of 5 columns: 2 candidate features per node, 8,600 row-candidates
    expect(forestOverrideFor('15.0.0', shape('binary', 4300, 5))).toEqual({ maxRows: 4300 });
    // at the budget exactly, and one row above it
    expect(forestOverrideFor('15.0.0', shape('binary', 6000, 4))).toEqual({ maxRows: 6000 });
    expect(forestOverrideFor('15.0.0', shape('binary', 6001, 4))).toBeUndefined();
    // 57 columns: 8 candidates per node, so 3,700 rows are over the budget
    expect(forestOverrideFor('15.0.0', shape('binary', 3700, 57))).toBeUndefined();
    // small data (at most 2,000 rows) keep the version's forest (at most 500 rows)
    expect(forestOverrideFor('15.0.0', shape('binary', 2000, 5))).toBeUndefined();
    expect(forestOverrideFor('15.0.0', shape('binary', 2001, 5))).toEqual({ maxRows: 2001 });
    // other tasks and other versions: unchanged, an override passed through
    expect(forestOverrideFor('15.0.0', shape('multiclass', 4300, 5, 3))).toBeUndefined();
    expect(forestOverrideFor('15.0.0', shape('regression', 4300, 5))).toBeUndefined();
    expect(forestOverrideFor('14.0.0', shape('binary', 4300, 5))).toBeUndefined();
    expect(forestOverrideFor('14.0.0', shape('binary', 4300, 5), { trees: 10 })).toEqual({ trees: 10 });
    // an override applies on top
    expect(forestOverrideFor('15.0.0', shape('binary', 4300, 5), { maxRows: 100, trees: 10 })).toEqual({ maxRows: 100, trees: 10 });
  });

  it('trains exactly 14.0.0\'s model, but for its version, on small binary data, multiclass data and regressions', () => {
    const cases = [['binary', 300], ['binary', 1500], ['multiclass', 2400], ['regression', 2400]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v14 = trainTabular(rows, { ...options, engineVersion: '14.0.0' }).model;
      const v15 = trainTabular(rows, { ...options, engineVersion: '15.0.0' }).model;
      expect(serialiseModel(v15)).toBe(serialiseModel({ ...v14, engine: { ...v14.engine, version: '15.0.0' } }));
    }
  });

  it('on binary data above small data is 14.0.0 with the forest member allowed, bit for bit, and keeps 14.0.0\'s configuration', () => {
    expect(groupOptionsFor('15.0.0')).toEqual(groupOptionsFor('14.0.0'));
    expect(categoryRuleFor('15.0.0')).toBe(categoryRuleFor('14.0.0'));
    const p = prepare(signalRows(2400, 15, 'binary'), 'target', 'classification', categoryRuleFor('15.0.0'));
    expect(isSmallData(p)).toBe(false);
    expect(forestOverrideFor('15.0.0', p)).toEqual({ maxRows: 2400 });
    const v15 = trainPrepared(p, { engineVersion: '15.0.0', seed: 1, config: FAST }).model;
    const v14 = trainPrepared(p, { engineVersion: '14.0.0', seed: 1, config: { ...FAST, forest: { maxRows: 2400 } } }).model;
    expect(serialiseModel(v15)).toBe(serialiseModel({ ...v14, engine: { ...v14.engine, version: '15.0.0' } }));
    const plain = trainPrepared(p, { engineVersion: '14.0.0', seed: 1, config: FAST }).model;
    expect(plain.forest).toBeUndefined();
    if (v15.forest) {
      expect(v15.forest.weight).toBeGreaterThan(0);
      expect(v15.forest.treeRoot.length).toBe(60);
    } else expect(serialiseModel(v15)).toBe(serialiseModel({ ...plain, engine: { ...plain.engine, version: '15.0.0' } }));
  });

  it('a binary model above small data with a forest part is deterministic for a seed and round-trips bit for bit', () => {
    // a target no tree ensemble of 40 rounds fits closely: a forest gets weight
    const rows = signalRows(2200, 18, 'binary').map((r, i) => ({ ...r, target: Math.sin(Number(r.x1) * 3) * Math.cos(Number(r.x3) * 9) + (i % 7) / 20 > 0.1 ? 'yes' : 'no' }));
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '15.0.0' as const, config: FAST };
    const a = trainTabular(rows, options).model;
    expect(a.forest).toBeDefined();
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(4);
    const back = loadModel(text);
    expect(back.engine).toEqual({ id: 'tabular-gbdt', version: '15.0.0' });
    expect(serialiseModel(back)).toBe(text);
    const query = signalRows(100, 17, 'binary');
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('15.0.0', kind, 4, FAST);
  });

  it('stays trainable by name in format 4 and servable after 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('15.0.0');
    expect(canServe('tabular-gbdt', '15.0.0')).toBe(true);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '15.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('15.0.0');
    expect(model.formatVersion).toBe(4);
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
