import { predictRows, serialiseModel, trainTabular } from '../../../engines/tabular/index';
import { calibratedLogLoss } from '../../../engines/tabular/gbdt';
import { makeLoss } from '../../../engines/tabular/loss';
import { categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { defaultConfig, honestOofScores, type EngineConfigOverride } from '../../../engines/tabular/train';
import { Prng } from '../../../engines/tabular/prng';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 60, folds: 3, models: 3 };

/**
 * The fifteenth round's experiment options (bench/RESULTS.md, "Fifteenth round of issue 15"): early
 * stopping on the recalibrated log loss (EngineConfig.stopMetric), the trees boosted from the linear
 * member (LinearOptions.boostFrom) and honest out-of-fold scores (EngineConfig.honestOof). No version
 * sets them; unset, every version trains as before.
 */
describe('the fifteenth round\'s experiment options', () => {
  it('change nothing when not set (13.0.0 with the options spelled out as their defaults)', () => {
    const rows = signalRows(300, 3, 'binary');
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '13.0.0' as const };
    const plain = trainTabular(rows, { ...options, config: FAST }).model;
    const spelled = trainTabular(rows, { ...options, config: { ...FAST, stopMetric: 'loss', honestOof: false, linear: { boostFrom: false } } }).model;
    expect(serialiseModel(spelled)).toBe(serialiseModel(plain));
  });

  it('calibratedLogLoss: the least log loss over affine recalibrations, the same for any affine map of the scores', () => {
    const rng = new Prng(5);
    const n = 400;
    const z = new Float64Array(n);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      z[i] = rng.nextFloat() * 4 - 2;
      y[i] = rng.nextFloat() < 1 / (1 + Math.exp(-1.5 * z[i])) ? 1 : 0;
    }
    const loss = makeLoss('log_loss', 2, y);
    const plain = loss.loss(y, z);
    const ab = Float64Array.of(1, 0);
    const cal = calibratedLogLoss(y, z, ab, 20);
    expect(cal).toBeLessThanOrEqual(plain);
    expect(ab[0]).toBeGreaterThan(1.2);
    // no pair of a coarse grid does better
    for (let a = 0.5; a <= 3; a += 0.25) {
      for (let b = -1; b <= 1; b += 0.25) {
        const t = Float64Array.from(z, (v) => a * v + b);
        expect(cal).toBeLessThanOrEqual(loss.loss(y, t) + 1e-9);
      }
    }
    const moved = Float64Array.from(z, (v) => 0.3 * v - 2);
    expect(calibratedLogLoss(y, moved, Float64Array.of(1, 0), 30)).toBeCloseTo(cal, 6);
  });

  it('honestOofScores: each half of the held-out rows gets the round chosen on the other half', () => {
    // two rows in each half; the even rows' loss is least after round 2, the odd rows' after round 5
    const y = Float64Array.of(1, 1, 1, 1);
    const path = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((r) => {
      const even = r === 1 ? 5 : r === 0 ? 0 : 2 - 0.1 * r;
      const odd = r === 4 ? 5 : 0.2 * r;
      return Float64Array.of(even, odd, even, odd);
    });
    const cfg = { ...defaultConfig(100, 'binary', 2), earlyStoppingRounds: 3, earlyStoppingMinDelta: 0 };
    const out = honestOofScores(path, y, makeLoss('log_loss', 2, y), cfg, 2);
    // even rows (half 0) at the odd rows' round (5), odd rows at the even rows' round (2)
    expect(Array.from(out)).toEqual([path[4][0], path[1][1], path[4][2], path[1][3]]);
  });

  it('honest out-of-fold scores leave the fold models as they were', () => {
    const p = prepare(signalRows(1200, 6, 'binary'), 'target', 'classification', categoryRuleFor('13.0.0'));
    const a = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: FAST });
    const b = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: { ...FAST, honestOof: true } });
    expect(b.core.foldModels.map((f) => f.rounds)).toEqual(a.core.foldModels.map((f) => f.rounds));
    expect(b.core.predictor).toEqual(a.core.predictor);
  });

  it('boosting from the linear member: the model is its trees plus the fold models\' average linear part, whole', () => {
    const rows = signalRows(400, 7, 'binary');
    const r = trainTabular(rows, { target: 'target', task: 'classification', seed: 2, engineVersion: '13.0.0', config: { ...FAST, linear: { boostFrom: true } } });
    expect(r.model.linear).toBeDefined();
    expect(r.model.linear?.treeWeight).toBe(1);
    expect(r.model.linear?.linearWeight).toBe(1);
    expect(r.validation.score).toBeGreaterThan(0.9);
    const out = predictRows(r.model, rows.slice(0, 20));
    expect(out).toHaveLength(20);
  });
});
