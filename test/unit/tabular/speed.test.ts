import { fitBins, transformBins } from '../../../engines/tabular/binning';
import { DEFAULT_GROWER_PARAMS, PartitionRouter, TreeGrower, binColumns, leafOfBinned, type GrowerParams } from '../../../engines/tabular/grower';
import { Prng } from '../../../engines/tabular/prng';

/** Numeric columns with and without missing values, one categorical column with missing values. */
function makeData(seed: number, n: number) {
  const rng = new Prng(seed);
  const F = 5;
  const X = new Float64Array(n * F);
  const g = new Float64Array(n);
  const h = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < 2; f++) X[i * F + f] = rng.nextFloat() < 0.15 ? NaN : Math.round(rng.nextFloat() * 60);
    X[i * F + 2] = rng.nextFloat() * 100;
    X[i * F + 3] = Math.round(rng.nextFloat() * 8);
    X[i * F + 4] = rng.nextFloat() < 0.1 ? NaN : rng.nextInt(12);
    const a = Number.isNaN(X[i * F]) ? 20 : X[i * F];
    g[i] = (a > 25 ? 1 : -0.5) + (X[i * F + 2] > 60 ? 0.4 : 0) + (X[i * F + 4] === 2 ? 0.7 : 0) + (rng.nextFloat() - 0.5);
    h[i] = 0.5 + rng.nextFloat();
  }
  const info = fitBins(X, n, F, [0, 0, 0, 0, 12], 255, 1);
  return { F, g, h, info, bins: transformBins(info, X, n, F) };
}

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
