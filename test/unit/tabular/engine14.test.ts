import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, groupOptionsFor, isSmallData, prepare, resolveConfigV12, resolveConfigV14, trainPrepared, V14_CLASSIFICATION_L2 } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/**
 * Engine 14.0.0 (bench/RESULTS.md, engine 14.0.0): 13.0.0 whose classification trees above small data
 * shrink their leaves by an L2 of 1/4 instead of 1; regressions and small data train 13.0.0's model.
 */
describe('engine 14: 13.0.0 with a leaf L2 of 1/4 for classification above small data', () => {
  it('trains exactly 13.0.0\'s model, but for its version, on regressions of any size and on small classification data', () => {
    const cases = [['binary', 300], ['binary', 2000], ['multiclass', 300], ['regression', 300], ['regression', 2600]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v13 = trainTabular(rows, { ...options, engineVersion: '13.0.0' }).model;
      const v14 = trainTabular(rows, { ...options, engineVersion: '14.0.0' }).model;
      expect(serialiseModel(v14)).toBe(serialiseModel({ ...v13, engine: { ...v13.engine, version: '14.0.0' } }));
    }
  });

  it('is 13.0.0 with the leaf-wise trees\' L2 at 1/4 above small data, bit for bit, and changes nothing else of the configuration', () => {
    expect(V14_CLASSIFICATION_L2).toBe(0.25);
    expect(groupOptionsFor('14.0.0')).toEqual(groupOptionsFor('13.0.0'));
    expect(categoryRuleFor('14.0.0')).toBe(categoryRuleFor('13.0.0'));
    for (const kind of ['binary', 'multiclass'] as const) {
      const p = prepare(signalRows(2400, 15, kind), 'target', 'classification', categoryRuleFor('14.0.0'));
      expect(isSmallData(p)).toBe(false);
      const c12 = resolveConfigV12(p);
      const c14 = resolveConfigV14(p);
      expect(c12.grower.lambdaL2).toBe(1);
      expect(c14).toEqual({ ...c12, grower: { ...c12.grower, lambdaL2: 0.25 } });
      expect(c14.grower.symmetricHybridL2).toBe(3);
      const v14 = trainPrepared(p, { engineVersion: '14.0.0', seed: 1, config: FAST }).model;
      const v13 = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: { ...FAST, grower: { lambdaL2: 0.25 } } }).model;
      expect(serialiseModel(v14)).toBe(serialiseModel({ ...v13, engine: { ...v13.engine, version: '14.0.0' } }));
      const plain = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: FAST }).model;
      expect(serialiseModel(v14)).not.toBe(serialiseModel({ ...plain, engine: { ...plain.engine, version: '14.0.0' } }));
    }
    // an override still applies on top
    const p = prepare(signalRows(2400, 15, 'binary'), 'target', 'classification', categoryRuleFor('14.0.0'));
    expect(resolveConfigV14(p, { grower: { lambdaL2: 2 } }).grower.lambdaL2).toBe(2);
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('14.0.0', kind, 4, FAST);
  });

  it('a model above small data is deterministic for a seed and round-trips bit for bit', () => {
    const rows = signalRows(2400, 16, 'multiclass');
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '14.0.0' as const, config: FAST };
    const a = trainTabular(rows, options).model;
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(4);
    const back = loadModel(text);
    expect(back.engine).toEqual({ id: 'tabular-gbdt', version: '14.0.0' });
    expect(serialiseModel(back)).toBe(text);
    const query = signalRows(100, 17, 'multiclass');
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });

  it('stays trainable by name in format 4 and servable after 15.0.0, 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(TABULAR_ENGINE.servableVersions).toContain('14.0.0');
    expect(canServe('tabular-gbdt', '14.0.0')).toBe(true);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '14.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('14.0.0');
    expect(model.formatVersion).toBe(4);
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
