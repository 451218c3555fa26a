import { serialiseModel } from '../../../engines/tabular/index';
import { earlyStoppingCallback, type CallbackResult } from '../../../engines/tabular/gbdt';
import { categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 400, folds: 3, models: 3, forest: { maxRows: 0 } };

/** The round an early-stopping callback stops at on a loss curve, and the round it keeps. */
function stopOn(losses: number[], cb: ReturnType<typeof earlyStoppingCallback>): { stoppedAt: number; kept: number } {
  for (let i = 0; i < losses.length; i++) {
    const r: CallbackResult = cb(Object.freeze({ iteration: i + 1, maxRounds: losses.length, trainLoss: null, validLoss: losses[i] }));
    if (r && 'stop' in r) return { stoppedAt: i + 1, kept: r.bestIteration };
  }
  return { stoppedAt: losses.length, kept: -1 };
}

/** A loss curve falling until round `best`, rising slowly after it. */
function curve(best: number, length: number): number[] {
  return Array.from({ length }, (_, i) => (i < best ? 1 - i * 0.01 : 1 - (best - 1) * 0.01 + 0.001 * (i - best + 1)));
}

/**
 * The twenty-sixth round's experiment option (bench/RESULTS.md): early stopping's patience as a share of the
 * best round so far (EngineConfig.earlyStoppingShare, earlyStoppingMin). No engine version sets it.
 */
describe('round 26 experiment: a patience of a share of the best round, between 1 / learning rate and the fixed patience', () => {
  it('stops after share × the best round, at least `min` and at most the fixed patience', () => {
    const at = (best: number, patience: number, min: number): { stoppedAt: number; kept: number } =>
      stopOn(curve(best, 400), earlyStoppingCallback(patience, 1e-4, true, { share: 0.5, min }));
    expect(at(8, 20, 10)).toEqual({ stoppedAt: 18, kept: 8 }); // the floor
    expect(at(30, 20, 10)).toEqual({ stoppedAt: 45, kept: 30 }); // half of 30
    expect(at(31, 20, 10)).toEqual({ stoppedAt: 47, kept: 31 }); // ceil(15.5)
    expect(at(100, 20, 10)).toEqual({ stoppedAt: 120, kept: 100 }); // the ceiling
    expect(at(60, 40, 20)).toEqual({ stoppedAt: 90, kept: 60 });
    // without a share: the fixed patience, whatever the best round
    expect(stopOn(curve(8, 400), earlyStoppingCallback(20, 1e-4, true))).toEqual({ stoppedAt: 28, kept: 8 });
    // an improvement within the patience moves the best round and the patience with it (ceil(41 / 2) = 21, at most 20)
    const late = curve(30, 400);
    late[40] = late[29] - 0.01;
    expect(stopOn(late, earlyStoppingCallback(20, 1e-4, true, { share: 0.5, min: 10 }))).toEqual({ stoppedAt: 61, kept: 41 });
  });

  it('through the configuration: deterministic for a seed, and no fold model keeps more rounds than without it', () => {
    const p = prepare(signalRows(900, 21, 'regression'), 'target', 'regression', categoryRuleFor('19.0.0'));
    const plain = trainPrepared(p, { engineVersion: '19.0.0', seed: 4, config: FAST });
    const config: EngineConfigOverride = { ...FAST, earlyStoppingShare: 0.5 };
    const a = trainPrepared(p, { engineVersion: '19.0.0', seed: 4, config });
    const b = trainPrepared(p, { engineVersion: '19.0.0', seed: 4, config });
    expect(serialiseModel(b.model)).toBe(serialiseModel(a.model));
    a.core.foldModels.forEach((f, m) => expect(f.rounds).toBeLessThanOrEqual(plain.core.foldModels[m].rounds));
    // an unset share is the fixed patience: 19.0.0's model
    const unset = trainPrepared(p, { engineVersion: '19.0.0', seed: 4, config: { ...FAST, earlyStoppingShare: undefined } });
    expect(serialiseModel(unset.model)).toBe(serialiseModel(plain.model));
  });
});
