import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { makeLoss } from '../../../engines/tabular/loss';
import { prepare, resolveMembers } from '../../../engines/tabular/pipeline';
import { blendWeights, fitPortfolio, membersFor, MEMBERS_V3 } from '../../../engines/tabular/portfolio';
import { Prng } from '../../../engines/tabular/prng';
import { fitCore, type EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 60, folds: 3, models: 3 };

/** Depth of every tree of a flat predictor (a single leaf has depth 0). */
function treeDepths(p: { treeRoot: Int32Array; nodeLeft: Int32Array; nodeRight: Int32Array }): number[] {
  const depth = (node: number): number => (node < 0 ? 0 : 1 + Math.max(depth(p.nodeLeft[node]), depth(p.nodeRight[node])));
  return Array.from(p.treeRoot, (r) => depth(r));
}

describe('blend weights fitted on out-of-fold scores', () => {
  function randomCase(seed: number, K: number, M: number) {
    const rng = new Prng(seed);
    const n = 200;
    const y = Float64Array.from({ length: n }, () => (K === 1 ? (rng.nextFloat() < 0.4 ? 1 : 0) : rng.nextInt(K)));
    // members of different quality: signal plus member-specific noise
    const oofs = Array.from({ length: M }, (_, m) => Float64Array.from({ length: n * K }, (_, j) => {
      const i = Math.floor(j / K);
      const k = j % K;
      const signal = K === 1 ? (y[i] === 1 ? 1 : -1) : y[i] === k ? 1 : 0;
      return signal * (0.5 + m * 0.3) + (rng.nextFloat() - 0.5) * (1 + m);
    }));
    return { y, oofs };
  }

  it.each([
    ['log_loss', 1],
    ['softmax', 4],
    ['squared_error', 1],
  ] as const)('(%s) are non-negative, sum to one and never lose to the best single member on those rows', (lossName, K) => {
    for (let seed = 0; seed < 5; seed++) {
      const { y, oofs } = randomCase(seed, K, 4);
      const b = blendWeights(oofs, y, lossName, K);
      expect(b.weights.every((w) => w >= 0)).toBe(true);
      expect(b.weights.reduce((a, w) => a + w, 0)).toBeCloseTo(1, 12);
      const loss = makeLoss(lossName, K, y);
      const blended = new Float64Array(y.length * K);
      oofs.forEach((o, m) => o.forEach((v, j) => (blended[j] += b.weights[m] * v)));
      const blendLoss = loss.loss(y, blended);
      const bestSingle = Math.min(...oofs.map((o) => loss.loss(y, o)));
      expect(blendLoss).toBeLessThanOrEqual(bestSingle + 1e-12);
      expect(blendLoss).toBeCloseTo(b.loss, 10);
    }
  });

  it('puts weight on more than one member when their errors are independent', () => {
    const rng = new Prng(3);
    const n = 400;
    const y = Float64Array.from({ length: n }, () => rng.nextFloat() * 10);
    const oofs = [0, 1].map(() => Float64Array.from(y, (v) => v + (rng.nextFloat() - 0.5) * 4));
    const b = blendWeights(oofs, y, 'squared_error', 1);
    expect(Math.min(b.weights[0], b.weights[1])).toBeGreaterThan(0.2);
  });

  it('gives all the weight to a member that is exactly right', () => {
    const y = Float64Array.from({ length: 50 }, (_, i) => i % 7);
    const b = blendWeights([Float64Array.from(y, (v) => v + 1), Float64Array.from(y), Float64Array.from(y, (v) => v * 0.5)], y, 'squared_error', 1);
    expect(Array.from(b.weights)).toEqual([0, 1, 0]);
  });

  it('uses only the rows every member held out', () => {
    const y = Float64Array.from([0, 1, 0, 1]);
    const a = Float64Array.from([-2, 2, NaN, NaN]);
    const c = Float64Array.from([2, -2, -50, 50]);
    const b = blendWeights([a, c], y, 'log_loss', 1);
    expect(Array.from(b.weights)).toEqual([1, 0]);
  });
});

describe('portfolio members', () => {
  const rows = signalRows(400, 21, 'regression');
  const p = prepare(rows, 'target', 'regression');
  const members = resolveMembers(p, FAST);
  const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };

  it('grow with the data: shallow only in low dimension, deep only from 2,000 rows with one output', () => {
    expect(members.map((m) => m.name)).toEqual(['leafwise', 'depthwise', 'shallow']);
    expect(membersFor(1999, 20)).toEqual(['leafwise', 'depthwise', 'shallow']);
    expect(membersFor(2000, 20)).toEqual(['leafwise', 'depthwise', 'shallow', 'deep']);
    expect(membersFor(500, 21)).toEqual(['leafwise', 'depthwise']);
    expect(membersFor(5000, 57)).toEqual(['leafwise', 'depthwise']);
    expect(membersFor(5000, 16, 26)).toEqual(['leafwise', 'depthwise', 'shallow']);
  });

  it('of engine 3.0.0 are engine 1 and a symmetric ensemble', () => {
    expect(MEMBERS_V3).toEqual(['leafwise', 'symmetric']);
    const sym = resolveMembers(p, FAST, '3.0.0').find((m) => m.name === 'symmetric');
    expect(sym?.cfg.grower.symmetric).toBe(true);
    const pred = fitCore(input, sym!.cfg, 1).predictor;
    // every tree is complete: 2^depth leaves for depth levels
    expect(Math.max(...treeDepths(pred))).toBeLessThanOrEqual(6);
  });

  it('each keep their own tree limits', () => {
    const all = resolveMembers(p, { ...FAST, members: ['leafwise', 'depthwise', 'shallow', 'deep'] });
    const depth = (name: string): number => Math.max(...treeDepths(fitCore(input, all.find((m) => m.name === name)!.cfg, 1).predictor));
    expect(depth('shallow')).toBeLessThanOrEqual(2);
    expect(depth('depthwise')).toBeLessThanOrEqual(6);
    expect(depth('deep')).toBeLessThanOrEqual(8);
    expect(depth('deep')).toBeGreaterThan(6);
    expect(depth('leafwise')).toBeGreaterThan(6);
  });

  it('share the fold split, so their out-of-fold scores are comparable row by row', () => {
    const r = fitPortfolio(input, members, 5);
    const held = (i: number) => r.core.foldModels.findIndex((f) => f.validRows.includes(i));
    for (let i = 0; i < p.n; i += 37) expect(held(i)).toBeGreaterThanOrEqual(0);
    const single = members.map((m) => fitCore(input, m.cfg, 5));
    for (const c of single) expect(c.foldModels.map((f) => Array.from(f.validRows))).toEqual(r.core.foldModels.map((f) => Array.from(f.validRows)));
  });

  it('merged into one predictor score what the weighted members score', () => {
    const r = fitPortfolio(input, members, 5);
    const single = members.map((m) => fitCore(input, m.cfg, 5));
    const w = r.blend.weights;
    const rawOf = (pred: typeof r.core.predictor) => predictRows({ ...trainTabular(rows.slice(0, 30), { target: 'target', config: FAST, engineVersion: '1.0.0' }).model, predictor: pred, columns: p.analysis.columns, features: p.analysis.features, inputColumns: p.analysis.columns.map((c) => c.name) }, rows.slice(0, 40)).map((q) => q.prediction as number);
    const blended = rawOf(r.core.predictor);
    const parts = single.map((c) => rawOf(c.predictor));
    blended.forEach((v, i) => expect(v).toBeCloseTo(parts.reduce((s, q, m) => s + w[m] * q[i], 0), 9));
  });
});

describe.each(['2.0.0', '3.0.0'] as const)('engine %s models', (version) => {
  const rows = signalRows(300, 4, 'binary');

  it('are trained when asked by name only: new models get the default version (2.0.0 and 3.0.0 missed their goals)', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(trainTabular(rows, { target: 'target', seed: 1, config: FAST }).model.engine.version).toBe('19.0.0');
    expect(trainTabular(rows, { target: 'target', seed: 1, config: FAST, engineVersion: version }).model.engine.version).toBe(version);
  });

  it('are deterministic for a seed and vary with the seed', () => {
    const v2 = { target: 'target', config: FAST, engineVersion: version } as const;
    const a = serialiseModel(trainTabular(rows, { ...v2, seed: 3 }).model);
    const b = serialiseModel(trainTabular(rows, { ...v2, seed: 3 }).model);
    const c = serialiseModel(trainTabular(rows, { ...v2, seed: 4 }).model);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it('round-trip through the artefact to byte-identical predictions', () => {
    for (const kind of ['binary', 'multiclass', 'regression'] as const) {
      const data = signalRows(250, 9, kind);
      const model = trainTabular(data, { target: 'target', seed: 2, config: FAST, engineVersion: version }).model;
      const text = serialiseModel(model);
      const loaded = loadModel(text);
      expect(loaded.engine).toEqual({ id: 'tabular-gbdt', version });
      expect(JSON.stringify(predictRows(loaded, data))).toBe(JSON.stringify(predictRows(model, data)));
      expect(serialiseModel(loaded)).toBe(text);
    }
  });

  it('report an out-of-fold validation no worse than engine 1 alone would on the same folds', () => {
    const data = signalRows(400, 12, 'regression');
    const v2 = trainTabular(data, { target: 'target', seed: 6, config: FAST, engineVersion: version }).validation;
    const v1 = trainTabular(data, { target: 'target', seed: 6, config: FAST, engineVersion: '1.0.0' }).validation;
    expect(v2.score).toBeLessThanOrEqual(v1.score + 1e-12);
  });
});

describe('engine catalogue', () => {
  it('serves every tabular version ever trained, and no other', () => {
    expect(canServe('tabular-gbdt', '1.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '2.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '3.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '0.0.1-retired')).toBe(false);
    expect(canServe('no-such-engine', '1.0.0')).toBe(false);
    const tabular = ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt');
    expect(canServe('tabular-gbdt', '4.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '6.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '7.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '8.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '9.0.0')).toBe(true);
    expect(canServe('tabular-gbdt', '10.0.0')).toBe(true);
    expect(tabular?.version).toBe('19.0.0');
    expect(tabular?.servableVersions).toContain(tabular?.version);
  });
});
