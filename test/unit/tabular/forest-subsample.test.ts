import { serialiseModel, trainTabular } from '../../../engines/tabular/index';
import { fitForest, outOfBagOutputs, predictForest } from '../../../engines/tabular/forest';
import { addForestMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/**
 * The seventeenth round's forest options (bench/RESULTS.md, seventeenth round of issue 15): each tree on
 * a random subsample of rows bounded by a work budget (ForestOptions.treeWork), and the member's weight
 * fitted on one forest's out-of-bag outputs instead of fold forests (ForestOptions.outOfBag).
 */
describe('forest trees on row subsamples (treeWork) and out-of-bag weights (outOfBag)', () => {
  const p = prepare(signalRows(400, 6, 'binary'), 'target', 'classification', categoryRuleFor('15.0.0'));
  const all = Int32Array.from({ length: p.n }, (_, i) => i);
  const mtry = Math.round(Math.sqrt(p.F));

  it('treeWork of at least rows × mtry grows the same trees as without it', () => {
    const plain = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 8, 3);
    const within = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 8, 3, 2, p.n * mtry);
    expect(Array.from(within.feature)).toEqual(Array.from(plain.feature));
    expect(Array.from(within.threshold)).toEqual(Array.from(plain.threshold));
    expect(Array.from(within.leafValue)).toEqual(Array.from(plain.leafValue));
  });

  it('a smaller treeWork grows each tree on floor(treeWork / mtry) distinct rows, deterministically', () => {
    const sub = 100;
    const bags = new Uint8Array(8 * p.n);
    const small = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 8, 3, 2, sub * mtry, bags);
    for (let t = 0; t < 8; t++) expect(bags.subarray(t * p.n, (t + 1) * p.n).reduce((s, b) => s + b, 0)).toBe(sub);
    // the trees' bags differ
    expect(Array.from(bags.subarray(0, p.n))).not.toEqual(Array.from(bags.subarray(p.n, 2 * p.n)));
    const again = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 8, 3, 2, sub * mtry);
    expect(Array.from(again.threshold)).toEqual(Array.from(small.threshold));
    // grown to purity on 100 rows: each tree has fewer leaves than rows of its subsample
    const plain = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 8, 3);
    expect(small.feature.length).toBeLessThan(plain.feature.length);
    for (let t = 0; t < 8; t++) {
      const end = t + 1 < 8 ? small.treeRoot[t + 1] : small.feature.length;
      expect(end - small.treeRoot[t]).toBeLessThan(2 * sub);
    }
  });

  it('outOfBagOutputs: each row averages the trees that left it out, as predictForest of those trees', () => {
    const bags = new Uint8Array(6 * p.n);
    const forest = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, 6, 5, 2, 150 * mtry, bags);
    const oob = outOfBagOutputs(forest, p.X, p.n, p.F, all, bags);
    for (const r of [0, 17, 123, 399]) {
      const trees = [0, 1, 2, 3, 4, 5].filter((t) => !bags[t * p.n + r]);
      const row = p.X.subarray(r * p.F, (r + 1) * p.F);
      if (trees.length === 0) {
        expect(Number.isNaN(oob[r * 2])).toBe(true);
        continue;
      }
      const sum = [0, 0];
      for (const t of trees) {
        const one = predictForest({ ...forest, treeRoot: Int32Array.of(forest.treeRoot[t]) }, row, 1, p.F);
        sum[0] += one[0];
        sum[1] += one[1];
      }
      expect(oob[r * 2]).toBeCloseTo(sum[0] / trees.length, 12);
      expect(oob[r * 2 + 1]).toBeCloseTo(sum[1] / trees.length, 12);
    }
  });

  it('predictForest and outOfBagOutputs, which walk blocks of rows tree by tree, give the bits of one row at a time with its trees in order', () => {
    // 700 rows: two whole blocks of 256 and a partial one; three classes
    const q = prepare(signalRows(700, 9, 'multiclass'), 'target', 'classification', categoryRuleFor('15.0.0'));
    const rows = Int32Array.from({ length: q.n }, (_, i) => i);
    const T = 7;
    const bags = new Uint8Array(T * q.n);
    const forest = fitForest(q.X, q.F, q.y, q.task, q.nClasses, rows, T, 11, 2, 300 * Math.round(Math.sqrt(q.F)), bags);
    const K = forest.nOutputs;
    const leafOf = (t: number, r: number): number => {
      let node = forest.treeRoot[t];
      while (forest.feature[node] >= 0) node = q.X[r * q.F + forest.feature[node]] <= forest.threshold[node] ? forest.left[node] : forest.right[node];
      return forest.left[node] * K;
    };
    const all = predictForest(forest, q.X, q.n, q.F);
    const oob = outOfBagOutputs(forest, q.X, q.n, q.F, rows, bags);
    let withoutOutOfBag = 0;
    for (let r = 0; r < q.n; r++) {
      const sum = new Float64Array(K);
      const oobSum = new Float64Array(K);
      let count = 0;
      for (let t = 0; t < T; t++) {
        const v = leafOf(t, r);
        for (let k = 0; k < K; k++) sum[k] += forest.leafValue[v + k];
        if (bags[t * q.n + r]) continue;
        for (let k = 0; k < K; k++) oobSum[k] += forest.leafValue[v + k];
        count++;
      }
      for (let k = 0; k < K; k++) {
        expect(Object.is(all[r * K + k], sum[k] / T)).toBe(true);
        if (count === 0) expect(Number.isNaN(oob[r * K + k])).toBe(true);
        else expect(Object.is(oob[r * K + k], oobSum[k] / count)).toBe(true);
      }
      if (count === 0) withoutOutOfBag++;
    }
    // most rows have trees that left them out, so the out-of-bag sums were compared
    expect(withoutOutOfBag).toBeLessThan(q.n / 10);
  });

  it('outOfBag: no fold forests, the weight from the out-of-bag outputs, the kept forest that forest', () => {
    const core = trainPrepared(p, { engineVersion: '15.0.0', seed: 2, config: FAST }).core;
    const r = addForestMember(p, core, 2, { maxRows: 1000, treeWork: 100 * mtry, outOfBag: true, trees: 20 }, '9.0.0');
    expect(r.oofOut).toBeDefined();
    // each tree on at most half the rows: (almost) every held-out row has out-of-bag trees
    const held = Array.from({ length: p.n }, (_, i) => i).filter((i) => !Number.isNaN(core.oofRaw[i]));
    expect(held.filter((i) => Number.isNaN((r.oofOut as Float64Array)[i * 2])).length).toBe(0);
    if (r.part) {
      expect(r.part.treeRoot.length).toBe(20);
      expect(r.weight).toBeGreaterThan(0);
    }
    // deterministic for a seed
    const again = addForestMember(p, core, 2, { maxRows: 1000, treeWork: 100 * mtry, outOfBag: true, trees: 20 }, '9.0.0');
    expect(Array.from(again.oofOut as Float64Array)).toEqual(Array.from(r.oofOut as Float64Array));
  });

  it('minWeight: a weight below it drops the member (the same weight and out-of-fold outputs, no part); at or below the weight keeps it', () => {
    const core = trainPrepared(p, { engineVersion: '15.0.0', seed: 2, config: FAST }).core;
    for (const outOfBag of [false, true]) {
      const base = { maxRows: 1000, trees: 20, foldTrees: 20, ...(outOfBag ? { treeWork: 100 * mtry, outOfBag: true } : {}) };
      const kept = addForestMember(p, core, 2, base, '9.0.0');
      const w = kept.weight as number;
      expect(w).toBeGreaterThan(0);
      expect(kept.part).toBeDefined();
      const atWeight = addForestMember(p, core, 2, { ...base, minWeight: w }, '9.0.0');
      expect(atWeight.part?.weight).toBe(w);
      const dropped = addForestMember(p, core, 2, { ...base, minWeight: w + 0.01 }, '9.0.0');
      expect(dropped.part).toBeUndefined();
      expect(dropped.weight).toBe(w);
      expect(Array.from(dropped.oofOut as Float64Array)).toEqual(Array.from(kept.oofOut as Float64Array));
    }
  });

  it('minGain: a mixture that gains less than it out of fold drops the member; a gain of 0 keeps every positive weight', () => {
    const core = trainPrepared(p, { engineVersion: '15.0.0', seed: 2, config: FAST }).core;
    const base = { maxRows: 1000, trees: 20, foldTrees: 20 };
    const kept = addForestMember(p, core, 2, base, '9.0.0');
    expect(kept.part).toBeDefined();
    expect(addForestMember(p, core, 2, { ...base, minGain: 0 }, '9.0.0').part).toEqual(kept.part);
    const dropped = addForestMember(p, core, 2, { ...base, minGain: 1 }, '9.0.0');
    expect(dropped.part).toBeUndefined();
    expect(dropped.weight).toBe(kept.weight);
  });

  it('change no version\'s model when not set (15.0.0 with treeWork above rows × mtry)', () => {
    const rows = signalRows(300, 3, 'binary');
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '15.0.0' as const };
    const plain = trainTabular(rows, { ...options, config: FAST }).model;
    const spelled = trainTabular(rows, { ...options, config: { ...FAST, forest: { treeWork: 1e9 } } }).model;
    expect(serialiseModel(spelled)).toBe(serialiseModel(plain));
  });
});
