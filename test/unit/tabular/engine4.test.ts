import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { DEFAULT_GROWER_PARAMS, TreeGrower, type GrowerParams } from '../../../engines/tabular/grower';
import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { Prng } from '../../../engines/tabular/prng';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { binnedGradients, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

describe('engine 4: fast symmetric split search', () => {
  // 40 categories: gradients led by the category, so that small nodes' categorical cuts (listed from
  // the bitmaps of their bins, growLevels) decide splits
  it.each([6, 40])('grows exactly the trees of growSymmetric (same splits, same leaf values, same row leaves), %i categories', (categories) => {
    for (let trial = 0; trial < 10; trial++) {
      const n = 150 + trial * 60;
      const { F, g, h, info, bins } = binnedGradients(7 + trial, n, categories);
      if (categories > 6) for (let i = 0; i < n; i++) g[i] += ((bins[i * F + 4] * 7) % 5) - 2;
      const params: GrowerParams = { ...DEFAULT_GROWER_PARAMS, lambdaL2: 3, minDataInLeaf: 1, minHessianInLeaf: 0, symmetric: true, maxDepth: 1 + (trial % 6) };
      const a = new TreeGrower(bins, n, F, info, params);
      const b = new TreeGrower(bins, n, F, info, params);
      const rng = new Prng(trial);
      const rows = Uint32Array.from({ length: n }, (_, i) => i).filter(() => rng.nextFloat() < 0.8);
      const mask = Uint8Array.from({ length: F }, (_, f) => (trial % 3 === 0 && f === 1 ? 0 : 1));
      // several trees in a row on the same growers (buffers are reused between trees)
      for (let t = 0; t < 3; t++) {
        const gt = g.map((v) => v * (1 + t * 0.3) - t * 0.1);
        const ref = a.growSymmetric(gt, h, rows, rows.length, mask);
        const fast = b.growSymmetricFast(gt, h, rows, rows.length, mask);
        expect(fast).toEqual(ref);
        expect(Array.from(b.rowLeaf)).toEqual(Array.from(a.rowLeaf));
      }
    }
  });
});

describe('engine 4: leaf-wise trees with rounds of symmetric trees in one model', () => {
  it('is deterministic for a seed and round-trips through the artefact bit for bit', () => {
    const rows = signalRows(300, 5, 'binary');
    const test = signalRows(80, 6, 'binary');
    const a = trainTabular(rows, { target: 'target', seed: 3, engineVersion: '4.0.0', config: FAST });
    const b = trainTabular(rows, { target: 'target', seed: 3, engineVersion: '4.0.0', config: FAST });
    expect(serialiseModel(a.model)).toBe(serialiseModel(b.model));
    expect(a.model.engine.version).toBe('4.0.0');
    const back = loadModel(serialiseModel(a.model));
    expect(predictRows(back, test)).toEqual(predictRows(a.model, test));
  });

  it.each(['multiclass', 'regression'] as const)('(%s) round-trips through the artefact bit for bit', (kind) => {
    const rows = signalRows(240, 8, kind);
    const test = signalRows(60, 9, kind);
    const a = trainTabular(rows, { target: 'target', task: kind === 'regression' ? 'regression' : 'classification', seed: 1, engineVersion: '4.0.0', config: FAST });
    expect(predictRows(loadModel(serialiseModel(a.model)), test)).toEqual(predictRows(a.model, test));
  });

  it('differs from engine 1 only by the symmetric rounds (symmetricEvery 0 trains engine 1 exactly)', () => {
    const rows = signalRows(300, 11, 'regression');
    const v1 = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion: '1.0.0', config: FAST });
    const v4 = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion: '4.0.0', config: { ...FAST, grower: { symmetricEvery: 0 } } });
    const same = (a: object, b: object): boolean => JSON.stringify(a) === JSON.stringify(b);
    expect(same(v4.model.predictor, v1.model.predictor)).toBe(true);
    const hybrid = trainTabular(rows, { target: 'target', task: 'regression', seed: 2, engineVersion: '4.0.0', config: FAST });
    expect(same(hybrid.model.predictor, v1.model.predictor)).toBe(false);
  });

  it('grows a symmetric tree every third round: complete, one split per level', () => {
    const rows = signalRows(400, 12, 'regression');
    // a single model (no fold averaging), so tree t is round t + 1
    const one = trainTabular(rows, { target: 'target', task: 'regression', seed: 4, engineVersion: '4.0.0', config: { folds: 1, models: 1, maxRounds: 30, earlyStoppingRounds: 1000 } });
    const p = one.model.predictor;
    const levels = (root: number): number[][] => {
      const out: number[][] = [];
      let level = [root];
      while (level.length > 0 && level.every((n) => n >= 0)) {
        out.push(level);
        level = level.flatMap((n) => [p.nodeLeft[n], p.nodeRight[n]]);
      }
      // a complete tree: the walk stops only where every node of the level is a leaf
      expect(level.every((n) => n < 0)).toBe(true);
      return out;
    };
    const roots = Array.from(p.treeRoot);
    expect(roots.length).toBe(30);
    let symmetric = 0;
    roots.forEach((r, t) => {
      if (t % 3 !== 2 || r < 0) return;
      const lv = levels(r);
      expect(lv.length).toBeLessThanOrEqual(5);
      for (const nodes of lv) {
        expect(new Set(nodes.map((n) => p.nodeFeature[n])).size).toBe(1);
        expect(new Set(nodes.map((n) => p.nodeThreshold[n])).size).toBe(1);
      }
      symmetric++;
    });
    expect(symmetric).toBeGreaterThan(5);
  });
});

describe('engine 4.0.0 in the catalogue', () => {
  it('stays servable and trainable by name after later versions became the default (19.0.0 now), as does 1.0.0', () => {
    expect(canServe('tabular-gbdt', '4.0.0')).toBe(true);
    expect(TABULAR_ENGINE.servableVersions).toEqual(['1.0.0', '2.0.0', '3.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0', '8.0.0', '9.0.0', '10.0.0', '11.0.0', '12.0.0', '13.0.0', '14.0.0', '15.0.0', '16.0.0', '17.0.0', '18.0.0', '19.0.0']);
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST }).model.engine).toEqual({ id: 'tabular-gbdt', version: '19.0.0' });
    const v4 = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '4.0.0', config: FAST });
    expect(v4.model.engine).toEqual({ id: 'tabular-gbdt', version: '4.0.0' });
    expect(canServe('tabular-gbdt', '1.0.0')).toBe(true);
    const v1 = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '1.0.0', config: FAST });
    expect(v1.model.engine).toEqual({ id: 'tabular-gbdt', version: '1.0.0' });
  });
});
