import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { prepare, resolveConfigV4, resolveConfigV5, V5_SMALL_WORK } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

describe('engine 5: 4.0.0 with a smaller learning rate and a longer patience on small data', () => {
  it('is deterministic for a seed and round-trips through the artefact bit for bit', () => {
    const rows = signalRows(300, 5, 'binary');
    const test = signalRows(80, 6, 'binary');
    const a = trainTabular(rows, { target: 'target', seed: 3, engineVersion: '5.0.0', config: FAST });
    const b = trainTabular(rows, { target: 'target', seed: 3, engineVersion: '5.0.0', config: FAST });
    expect(serialiseModel(a.model)).toBe(serialiseModel(b.model));
    expect(a.model.engine).toEqual({ id: 'tabular-gbdt', version: '5.0.0' });
    const back = loadModel(serialiseModel(a.model));
    expect(predictRows(back, test)).toEqual(predictRows(a.model, test));
  });

  it.each(['multiclass', 'regression'] as const)('(%s) round-trips through the artefact bit for bit', (kind) => {
    const rows = signalRows(240, 8, kind);
    const test = signalRows(60, 9, kind);
    const a = trainTabular(rows, { target: 'target', task: kind === 'regression' ? 'regression' : 'classification', seed: 1, engineVersion: '5.0.0', config: FAST });
    expect(predictRows(loadModel(serialiseModel(a.model)), test)).toEqual(predictRows(a.model, test));
  });

  it('changes the configuration only up to V5_SMALL_WORK row-outputs (rows x classes for multiclass)', () => {
    const small = prepare(signalRows(V5_SMALL_WORK, 1, 'regression'), 'target', 'regression');
    const v4 = resolveConfigV4(small);
    expect(resolveConfigV5(small)).toEqual({ ...v4, learningRate: 0.05, maxRounds: 2000, earlyStoppingRounds: 100 });
    const large = prepare(signalRows(V5_SMALL_WORK + 1, 1, 'regression'), 'target', 'regression');
    expect(resolveConfigV5(large)).toEqual(resolveConfigV4(large));
    // multiclass counts rows x classes: 667 rows of 3 classes are large, 666 small
    const multi = prepare(signalRows(667, 2, 'multiclass'), 'target', 'classification');
    expect(multi.nClasses).toBe(3);
    expect(resolveConfigV5(multi)).toEqual(resolveConfigV4(multi));
    const multiSmall = prepare(signalRows(666, 2, 'multiclass'), 'target', 'classification');
    expect(resolveConfigV5(multiSmall).learningRate).toBe(0.05);
    // an override applies on top, as for 4.0.0
    expect(resolveConfigV5(small, { learningRate: 0.2, grower: { lambdaL2: 5 } })).toEqual({ ...resolveConfigV5(small), learningRate: 0.2, grower: { ...v4.grower, lambdaL2: 5 } });
  });

  it('trains exactly 4.0.0\'s model on data above the threshold', () => {
    const rows = signalRows(V5_SMALL_WORK + 200, 21, 'binary');
    const cfg: EngineConfigOverride = { maxRounds: 15 };
    const v4 = trainTabular(rows, { target: 'target', seed: 2, engineVersion: '4.0.0', config: cfg });
    const v5 = trainTabular(rows, { target: 'target', seed: 2, engineVersion: '5.0.0', config: cfg });
    expect(JSON.stringify(v5.model.predictor)).toBe(JSON.stringify(v4.model.predictor));
    expect(v5.validation).toEqual(v4.validation);
  });

  it('trains a different model than 4.0.0 on small data', () => {
    const rows = signalRows(200, 22, 'regression');
    const v4 = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion: '4.0.0' });
    const v5 = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion: '5.0.0' });
    expect(JSON.stringify(v5.model.predictor)).not.toBe(JSON.stringify(v4.model.predictor));
  });

  it('is servable and trainable by name (16.0.0 is the version new models get)', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.servableVersions).toContain('5.0.0');
    const v5 = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '5.0.0' }).model;
    expect(v5.engine.version).toBe('5.0.0');
    // its artefacts keep format 1, whatever the newest format the engine reads
    expect(v5.formatVersion).toBe(1);
    expect((JSON.parse(serialiseModel(v5)) as { formatVersion: number }).formatVersion).toBe(1);
  });
});
