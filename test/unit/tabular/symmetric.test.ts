import { fitBins, transformBins } from '../../../engines/tabular/binning';
import { DEFAULT_GROWER_PARAMS, TreeGrower, leafOfBinned, leafOfRouted, routerOf, type BuiltTree, type GrowerParams } from '../../../engines/tabular/grower';
import { Prng } from '../../../engines/tabular/prng';

const lambda = 1;

function params(over: Partial<GrowerParams>): GrowerParams {
  return { ...DEFAULT_GROWER_PARAMS, lambdaL2: lambda, minDataInLeaf: 1, minHessianInLeaf: 0, symmetric: true, ...over };
}

/** A mixed matrix: numeric columns with missing values and one categorical column (codes 0..4, NaN). */
function makeData(seed: number, n: number) {
  const rng = new Prng(seed);
  const F = 4;
  const X = new Float64Array(n * F);
  const g = new Float64Array(n);
  const h = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < 3; f++) X[i * F + f] = rng.nextFloat() < 0.1 ? NaN : Math.round(rng.nextFloat() * 40);
    X[i * F + 3] = rng.nextFloat() < 0.1 ? NaN : rng.nextInt(5);
    const a = Number.isNaN(X[i * F]) ? 20 : X[i * F];
    const c = Number.isNaN(X[i * F + 3]) ? 2 : X[i * F + 3];
    g[i] = (a > 25 ? 1 : -0.5) + (c === 1 || c === 3 ? 0.7 : 0) + (rng.nextFloat() - 0.5);
    h[i] = 0.5 + rng.nextFloat();
  }
  const info = fitBins(X, n, F, [0, 0, 0, 5], 255, 1);
  const bins = transformBins(info, X, n, F);
  return { X, F, g, h, info, bins };
}

/** The leaf of a row found level by level: bit d (from the root) is 1 when the row goes right at level d. */
function bruteForceLeaf(tree: BuiltTree, info: ReturnType<typeof fitBins>, bins: Uint8Array, base: number): number {
  let depth = 0;
  while ((1 << (depth + 1)) - 1 <= tree.feature.length) depth++;
  let leaf = 0;
  for (let d = 0; d < depth; d++) {
    const node = (1 << d) - 1; // every node of a level holds the same split: read the first
    const f = tree.feature[node];
    const b = bins[base + f];
    let left: boolean;
    if (tree.isCategorical[node]) left = (tree.catLeft[node] as Uint8Array)[b] === 1;
    else if (b === info.numBins[f]) left = tree.defaultLeft[node];
    else left = b <= tree.thresholdBin[node];
    leaf = leaf * 2 + (left ? 0 : 1);
  }
  return leaf;
}

describe('symmetric (oblivious) trees', () => {
  it('share one split per level and route rows like a brute-force walk of the levels', () => {
    for (let trial = 0; trial < 8; trial++) {
      const n = 300;
      const { F, g, h, info, bins } = makeData(40 + trial, n);
      const depth = 1 + (trial % 5);
      const grower = new TreeGrower(bins, n, F, info, params({ maxDepth: depth }));
      const tree = grower.growSymmetric(g, h, Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
      expect(tree.feature.length).toBe((1 << depth) - 1);
      expect(tree.leafValue.length).toBe(1 << depth);
      for (let d = 0; d < depth; d++) {
        for (let j = 1; j < 1 << d; j++) {
          const a = (1 << d) - 1;
          expect(tree.feature[a + j]).toBe(tree.feature[a]);
          expect(tree.thresholdBin[a + j]).toBe(tree.thresholdBin[a]);
          expect(tree.defaultLeft[a + j]).toBe(tree.defaultLeft[a]);
        }
      }
      const router = routerOf(tree, info);
      const sums = Array.from({ length: 1 << depth }, () => [0, 0, 0]);
      for (let i = 0; i < n; i++) {
        const leaf = bruteForceLeaf(tree, info, bins, i * F);
        expect(leafOfBinned(tree, info, bins, i * F)).toBe(leaf);
        expect(leafOfRouted(router, bins, i * F)).toBe(leaf);
        expect(grower.rowLeaf[i]).toBe(leaf);
        sums[leaf][0] += g[i];
        sums[leaf][1] += h[i];
        sums[leaf][2]++;
      }
      // leaf values are the regularised Newton steps of their rows
      sums.forEach(([gs, hs, c], l) => {
        expect(tree.leafValue[l]).toBeCloseTo(-gs / (hs + lambda), 9);
        expect(tree.leafCount[l]).toBe(c);
      });
    }
  });

  it('chooses at each level the split with the largest gain summed over the level, as brute force', () => {
    const n = 200;
    const { F, g, h, info, bins } = makeData(7, n);
    const grower = new TreeGrower(bins, n, F, info, params({ maxDepth: 2 }));
    const tree = grower.growSymmetric(g, h, Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
    const score = (gs: number, hs: number): number => (gs * gs) / (hs + lambda);
    // level-2 gain of every numeric threshold (either missing direction) given the root split
    const rootLeft = (i: number): boolean => bruteForceLeaf({ ...tree, feature: [tree.feature[0]], left: [~0], right: [~1] }, info, bins, i * F) === 0;
    let best = -Infinity;
    for (let f = 0; f < 3; f++) {
      for (let t = 0; t < info.numBins[f]; t++) {
        for (const missingLeft of [false, true]) {
          let gain = 0;
          for (const side of [true, false]) {
            let G = 0, H = 0, gl = 0, hl = 0;
            for (let i = 0; i < n; i++) {
              if (rootLeft(i) !== side) continue;
              const b = bins[i * F + f];
              G += g[i];
              H += h[i];
              if (b === info.numBins[f] ? missingLeft : b <= t) {
                gl += g[i];
                hl += h[i];
              }
            }
            gain += score(gl, hl) + score(G - gl, H - hl) - score(G, H);
          }
          best = Math.max(best, gain);
        }
      }
    }
    // the chosen level-2 split is at least as good as every numeric one (it may be categorical)
    expect(tree.gain[1] + tree.gain[2]).toBeGreaterThanOrEqual(best - 1e-9);
  });

  it('is deterministic and stops early when nothing gains', () => {
    const n = 100;
    const { F, g, h, info, bins } = makeData(3, n);
    const grow = (): BuiltTree => new TreeGrower(bins, n, F, info, params({ maxDepth: 4 })).growSymmetric(g, h, Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
    expect(grow()).toEqual(grow());
    const flat = new TreeGrower(bins, n, F, info, params({ maxDepth: 4 })).growSymmetric(new Float64Array(n).fill(0.5), new Float64Array(n).fill(1), Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
    expect(flat.feature.length).toBe(0);
    expect(flat.leafValue).toEqual([-50 / (100 + lambda)]);
  });
});
