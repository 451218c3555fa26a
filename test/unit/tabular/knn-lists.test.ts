import { distance, fitSpace, neighbourLists, toSpace, type KnnSpace } from '../../../engines/tabular/knn';
import { Prng } from '../../../engines/tabular/prng';

/** Rows with numeric and categorical columns, ties (a coarse grid) and missing values. */
function grid(n: number, F: number, catCols: number[], seed: number): { X: Float64Array; categorical: Int32Array } {
  const rng = new Prng(seed);
  const X = new Float64Array(n * F);
  const categorical = new Int32Array(F);
  for (const c of catCols) categorical[c] = 1;
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < F; f++) {
      X[i * F + f] = categorical[f] ? rng.nextInt(3) : rng.nextInt(4) / 2;
      if ((i * 7 + f) % 23 === 0) X[i * F + f] = NaN;
    }
  }
  return { X, categorical };
}

/** 17.0.0's neighbour lists as first written: every pair's distance computed from both ends. */
function naiveLists(space: KnnSpace, Z: Float64Array, n: number, F: number, listSize: number): { idx: Int32Array; dist: Float64Array; L: number } {
  const L = Math.min(listSize, n - 1);
  const idx = new Int32Array(n * L);
  const dist = new Float64Array(n * L);
  for (let i = 0; i < n; i++) {
    const cand: { d: number; j: number }[] = [];
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      cand.push({ d: distance(space, Z, i, Z, j, F), j });
    }
    // a stable sort: ties in index order, as the insertion keeps them
    cand.sort((a, b) => a.d - b.d);
    for (let t = 0; t < L; t++) {
      idx[i * L + t] = cand[t].j;
      dist[i * L + t] = cand[t].d;
    }
  }
  return { idx, dist, L };
}

describe('kNN neighbour lists', () => {
  it('are those of computing every pair from both ends (numeric and mixed data, ties, short lists)', () => {
    for (const [n, F, cats, L] of [[120, 5, [], 128], [150, 6, [1, 4], 16], [60, 3, [0], 128], [2, 2, [], 128]] as [number, number, number[], number][]) {
      const { X, categorical } = grid(n, F, cats, n);
      const space = fitSpace(X, n, F, categorical, 1);
      const Z = toSpace(space, X, n, F);
      const got = neighbourLists(space, Z, n, F, L);
      const want = naiveLists(space, Z, n, F, L);
      expect(got.L).toBe(want.L);
      expect(Array.from(got.idx)).toEqual(Array.from(want.idx));
      expect(Array.from(got.dist)).toEqual(Array.from(want.dist));
    }
  });
});
