import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, forestOverrideFor, groupOptionsFor, isSmallData, prepare, trainPrepared, V15_BINARY_FOREST_MAX_WORK, V16_FOREST_MAX_ROWS, type Prepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** The fields of prepared data forestOverrideFor reads. */
function shape(task: Prepared['task'], n: number, F: number, nClasses = task === 'regression' ? 0 : 2): Prepared {
  return { task, n, F, nClasses } as Prepared;
}

/**
 * Engine 16.0.0 (bench/RESULTS.md, seventeenth round of issue 15): 15.0.0 whose forest member also
 * reaches binary data above its budget, as one forest of trees on row subsamples (treeWork) weighed by
 * its out-of-bag outputs (outOfBag); other data train 15.0.0's model.
 */
describe('engine 16: 15.0.0 with a subsampled, out-of-bag forest on binary data above the budget', () => {
  it('gives binary data above the budget the subsampled forest, within it 15.0.0\'s, and only in 16.0.0', () => {
    expect(V15_BINARY_FOREST_MAX_WORK).toBe(12000);
    expect(V16_FOREST_MAX_ROWS).toBe(100000);
    const sub = { treeWork: 12000, outOfBag: true };
    // within 15.0.0's budget: 15.0.0's forest (all rows, fold forests)
    expect(forestOverrideFor('16.0.0', shape('binary', 4300, 5))).toEqual({ maxRows: 4300 });
    expect(forestOverrideFor('16.0.0', shape('binary', 6000, 4))).toEqual({ maxRows: 6000 });
    // above it: trees on subsamples, weighed out of bag
    expect(forestOverrideFor('16.0.0', shape('binary', 6001, 4))).toEqual({ maxRows: 6001, ...sub });
    expect(forestOverrideFor('16.0.0', shape('binary', 3700, 57))).toEqual({ maxRows: 3700, ...sub });
    expect(forestOverrideFor('16.0.0', shape('binary', 100000, 57))).toEqual({ maxRows: 100000, ...sub });
    expect(forestOverrideFor('16.0.0', shape('binary', 100001, 57))).toBeUndefined();
    // 15.0.0 is unchanged
    expect(forestOverrideFor('15.0.0', shape('binary', 3700, 57))).toBeUndefined();
    expect(forestOverrideFor('15.0.0', shape('binary', 4300, 5))).toEqual({ maxRows: 4300 });
    // small data, other tasks: the version's forest (at most 500 rows)
    expect(forestOverrideFor('16.0.0', shape('binary', 2000, 57))).toBeUndefined();
    expect(forestOverrideFor('16.0.0', shape('multiclass', 8000, 57, 3))).toBeUndefined();
    expect(forestOverrideFor('16.0.0', shape('regression', 8000, 57))).toBeUndefined();
    // an override applies on top
    expect(forestOverrideFor('16.0.0', shape('binary', 3700, 57), { trees: 10 })).toEqual({ maxRows: 3700, ...sub, trees: 10 });
  });

  it('trains exactly 15.0.0\'s model, but for its version, on small binary data, multiclass data, regressions and binary data within the budget', () => {
    const cases = [['binary', 300], ['binary', 1500], ['multiclass', 2400], ['regression', 2400], ['binary', 2400]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v15 = trainTabular(rows, { ...options, engineVersion: '15.0.0' }).model;
      const v16 = trainTabular(rows, { ...options, engineVersion: '16.0.0' }).model;
      expect(serialiseModel(v16)).toBe(serialiseModel({ ...v15, engine: { ...v15.engine, version: '16.0.0' } }));
    }
  });

  it('above the budget is 15.0.0 with the subsampled forest, bit for bit, and keeps 15.0.0\'s configuration', () => {
    expect(groupOptionsFor('16.0.0')).toEqual(groupOptionsFor('15.0.0'));
    expect(categoryRuleFor('16.0.0')).toBe(categoryRuleFor('15.0.0'));
    // 2,400 rows of 40 columns: 6 candidates per node, 14,400 > 12,000
    const rows = signalRows(2400, 15, 'binary').map((r, i) => {
      const wide: Record<string, unknown> = { ...r };
      for (let c = 0; c < 35; c++) wide[`z${c}`] = ((i * (c + 3)) % 17) / 17;
      return wide as typeof r;
    });
    const p = prepare(rows, 'target', 'classification', categoryRuleFor('16.0.0'));
    expect(isSmallData(p)).toBe(false);
    expect(p.n * Math.round(Math.sqrt(p.F))).toBeGreaterThan(V15_BINARY_FOREST_MAX_WORK);
    const v16 = trainPrepared(p, { engineVersion: '16.0.0', seed: 1, config: FAST }).model;
    const v15 = trainPrepared(p, { engineVersion: '15.0.0', seed: 1, config: { ...FAST, forest: { maxRows: p.n, treeWork: 12000, outOfBag: true } } }).model;
    expect(serialiseModel(v16)).toBe(serialiseModel({ ...v15, engine: { ...v15.engine, version: '16.0.0' } }));
    const plain = trainPrepared(p, { engineVersion: '15.0.0', seed: 1, config: FAST }).model;
    expect(plain.forest).toBeUndefined();
    if (v16.forest) {
      expect(v16.forest.weight).toBeGreaterThan(0);
      expect(v16.forest.treeRoot.length).toBe(60);
    } else expect(serialiseModel(v16)).toBe(serialiseModel({ ...plain, engine: { ...plain.engine, version: '16.0.0' } }));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('16.0.0', kind, 4, FAST);
  });

  it('a binary model with a subsampled forest part round-trips bit for bit', () => {
    const rows = signalRows(2200, 18, 'binary').map((r, i) => {
      const wide: Record<string, unknown> = { ...r, target: Math.sin(Number(r.x1) * 3) * Math.cos(Number(r.x3) * 9) + (i % 7) / 20 > 0.1 ? 'yes' : 'no' };
      for (let c = 0; c < 40; c++) wide[`z${c}`] = ((i * (c + 5)) % 13) / 13;
      return wide as typeof r;
    });
    // boosting of 5 rounds leaves room for the forest: it gets weight
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '16.0.0' as const, config: { ...FAST, maxRounds: 5 } };
    const a = trainTabular(rows, options).model;
    expect(a.forest).toBeDefined();
    expect(a.forest?.treeRoot.length).toBe(60);
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    const back = loadModel(text);
    expect(back.engine).toEqual({ id: 'tabular-gbdt', version: '16.0.0' });
    expect(serialiseModel(back)).toBe(text);
    const query = rows.slice(0, 100);
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });

  it('stays trainable by name in format 4 and servable after 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('16.0.0');
    expect(canServe('tabular-gbdt', '16.0.0')).toBe(true);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '16.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('16.0.0');
    expect(model.formatVersion).toBe(4);
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
