import { DEFAULT_GROWER_PARAMS, PartitionRouter, TreeGrower, binColumns, leafOfBinned, type GrowerParams, type RootCounts } from '../../../engines/tabular/grower';
import { Prng } from '../../../engines/tabular/prng';
import { binnedGradients } from './helpers';

const makeData = (seed: number, n: number) => binnedGradients(seed, n, 12);

describe('PartitionRouter', () => {
  it('finds the leaves leafOfBinned finds, for leaf-wise and symmetric trees, any subset of rows', () => {
    for (let trial = 0; trial < 8; trial++) {
      const n = 200 + trial * 50;
      const { F, g, h, info, bins } = makeData(11 + trial, n);
      const symmetric = trial % 2 === 1;
      const params: GrowerParams = { ...DEFAULT_GROWER_PARAMS, minDataInLeaf: 3, lambdaL2: 1, maxCatToOnehot: trial % 4 === 0 ? 16 : 4, symmetric, maxDepth: symmetric ? 5 : 0 };
      const grower = new TreeGrower(bins, n, F, info, params);
      const rng = new Prng(trial);
      const rows = Uint32Array.from({ length: n }, (_, i) => i).filter(() => rng.nextFloat() < 0.7);
      const tree = symmetric ? grower.growSymmetricFast(g, h, rows, rows.length, new Uint8Array(F).fill(1)) : grower.grow(g, h, rows, rows.length, new Uint8Array(F).fill(1));
      expect(tree.feature.length).toBeGreaterThan(3);
      const router = new PartitionRouter(n);
      const leaf = new Int32Array(n).fill(-1);
      const cols = binColumns(bins, n, F);
      router.route(tree, info, cols, n, null, n, leaf);
      for (let i = 0; i < n; i++) expect(leaf[i]).toBe(leafOfBinned(tree, info, bins, i * F));
      if (symmetric) {
        const leafS = new Int32Array(n).fill(-1);
        router.routeSymmetric(tree, info, cols, n, null, n, leafS);
        expect(Array.from(leafS)).toEqual(Array.from(leaf));
        const some = rows.subarray(0, 40);
        const leafS2 = new Int32Array(n).fill(-1);
        router.routeSymmetric(tree, info, cols, n, some, some.length, leafS2);
        for (const i of some) expect(leafS2[i]).toBe(leaf[i]);
      }
      // a subset: only its rows are written
      const some = rows.subarray(0, Math.floor(rows.length / 3));
      const leaf2 = new Int32Array(n).fill(-1);
      router.route(tree, info, cols, n, some, some.length, leaf2);
      const inSome = new Set(Array.from(some));
      for (let i = 0; i < n; i++) expect(leaf2[i]).toBe(inSome.has(i) ? leafOfBinned(tree, info, bins, i * F) : -1);
    }
  });
});

describe('TreeGrower leaf ranges', () => {
  it('addLeafValues adds to the sample rows what rowLeaf gives, and rowLeaf is the walked leaf (-1 outside the sample)', () => {
    for (let trial = 0; trial < 6; trial++) {
      const n = 150 + trial * 40;
      const { F, g, h, info, bins } = makeData(31 + trial, n);
      const symmetric = trial % 2 === 1;
      const params: GrowerParams = { ...DEFAULT_GROWER_PARAMS, minDataInLeaf: 3, lambdaL2: 1, symmetric, maxDepth: symmetric ? 4 : 0 };
      const grower = new TreeGrower(bins, n, F, info, params);
      const rng = new Prng(100 + trial);
      const rows = Uint32Array.from({ length: n }, (_, i) => i).filter(() => rng.nextFloat() < 0.8);
      const mask = new Uint8Array(F).fill(1);
      for (let t = 0; t < 2; t++) {
        const tree = symmetric ? grower.growSymmetricFast(g, h, rows, rows.length, mask) : grower.grow(g, h, rows, rows.length, mask);
        const K = 3;
        const out = new Float64Array(n * K).fill(0.5);
        grower.addLeafValues(out, K, 1, tree.leafValue);
        const inSample = new Set(Array.from(rows));
        for (let i = 0; i < n; i++) {
          const l = grower.rowLeaf[i];
          expect(l).toBe(inSample.has(i) ? leafOfBinned(tree, info, bins, i * F) : -1);
          expect(out[i * K + 1]).toBe(l >= 0 ? 0.5 + tree.leafValue[l] : 0.5);
          expect(out[i * K]).toBe(0.5);
        }
      }
    }
  });
});

describe('TreeGrower root counts', () => {
  it('a tree whose root reuses the counts kept by a tree of the same rows and features is the tree grown without them', () => {
    for (let trial = 0; trial < 6; trial++) {
      const n = 180 + trial * 60;
      const { F, g, h, info, bins } = makeData(51 + trial, n);
      const other = makeData(71 + trial, n);
      const symmetric = trial % 2 === 1;
      const params: GrowerParams = { ...DEFAULT_GROWER_PARAMS, minDataInLeaf: 3, lambdaL2: 1, symmetric, maxDepth: symmetric ? 5 : 0 };
      const rng = new Prng(200 + trial);
      const rows = Uint32Array.from({ length: n }, (_, i) => i).filter(() => rng.nextFloat() < 0.8);
      const mask = Uint8Array.from({ length: F }, (_, f) => (f % 4 === 3 ? 0 : 1));
      const grow = (t: TreeGrower, gg: Float64Array, hh: Float64Array, counts: RootCounts) =>
        symmetric ? t.growSymmetricFast(gg, hh, rows, rows.length, mask, counts) : t.grow(gg, hh, rows, rows.length, mask, counts);
      const shared = new TreeGrower(bins, n, F, info, params);
      grow(shared, g, h, 'keep');
      const reused = grow(shared, other.g, other.h, 'reuse');
      const plain = grow(new TreeGrower(bins, n, F, info, params), other.g, other.h, 'none');
      expect(plain.feature.length).toBeGreaterThan(3);
      expect(reused).toEqual(plain);
    }
  });
});
