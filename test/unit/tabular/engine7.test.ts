import { serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { prepare, resolveConfigV5, resolveConfigV7, V5_SMALL_WORK, V7_SMALL_PATIENCE } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

describe('engine 7: 6.0.0 with a shorter early-stopping patience for small data\'s trees', () => {
  it('changes only the small-data patience of 5.0.0\'s configuration, to 40 rounds', () => {
    expect(V7_SMALL_PATIENCE).toBe(40);
    const small = prepare(signalRows(V5_SMALL_WORK, 1, 'regression'), 'target', 'regression');
    expect(resolveConfigV5(small).earlyStoppingRounds).toBe(100);
    expect(resolveConfigV7(small)).toEqual({ ...resolveConfigV5(small), earlyStoppingRounds: 40 });
    const large = prepare(signalRows(V5_SMALL_WORK + 1, 1, 'regression'), 'target', 'regression');
    expect(resolveConfigV7(large)).toEqual(resolveConfigV5(large));
    // multiclass counts rows x classes, as for 5.0.0: 667 rows of 3 classes are large
    const multi = prepare(signalRows(667, 2, 'multiclass'), 'target', 'classification');
    expect(resolveConfigV7(multi)).toEqual(resolveConfigV5(multi));
    // an override applies on top
    expect(resolveConfigV7(small, { earlyStoppingRounds: 7 })).toEqual({ ...resolveConfigV5(small), earlyStoppingRounds: 7 });
  });

  it('trains 6.0.0\'s model, trees and linear part, on data above the small threshold', () => {
    const rows = signalRows(V5_SMALL_WORK + 200, 21, 'binary');
    const cfg: EngineConfigOverride = { maxRounds: 15 };
    const v6 = trainTabular(rows, { target: 'target', seed: 2, engineVersion: '6.0.0', config: cfg });
    const v7 = trainTabular(rows, { target: 'target', seed: 2, engineVersion: '7.0.0', config: cfg });
    expect(v7.model.linear).toBeDefined();
    expect(serialiseModel(v7.model)).toBe(serialiseModel({ ...v6.model, engine: { ...v6.model.engine, version: '7.0.0' } }));
    expect(v7.validation).toEqual(v6.validation);
  });

  it('trains fewer boosting rounds than 6.0.0 on small data and still blends in the linear member', () => {
    const rows = signalRows(300, 22, 'regression');
    const rounds = (engineVersion: '6.0.0' | '7.0.0'): { trained: number; model: ReturnType<typeof trainTabular>['model'] } => {
      let trained = 0;
      const { model } = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion, onProgress: () => trained++ });
      return { trained, model };
    };
    const v6 = rounds('6.0.0');
    const v7 = rounds('7.0.0');
    // progress comes every tenth boosting round: the fold models stop 40 rounds after their best one, not 100
    expect(v7.trained).toBeLessThan(v6.trained);
    expect(v7.model.linear).toBeDefined();
    expect(v7.model.formatVersion).toBe(2);
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-2 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('7.0.0', kind, 2, FAST);
  });

  it('stays servable and trainable by name after 8.0.0, 9.0.0, 10.0.0, 11.0.0, 12.0.0, 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0 and 18.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(canServe('tabular-gbdt', '7.0.0')).toBe(true);
    for (const version of ['1.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0'] as const) {
      expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: version }).model.engine.version).toBe(version);
    }
    expect(TABULAR_ENGINE.servableVersions).toContain('7.0.0');
  });
});
