import { fitBins, transformBins } from '../../../engines/tabular/binning';
import { DEFAULT_GROWER_PARAMS, TreeGrower, leafOfBinned, leafOfRouted, routerOf, subtractMarkedBins, type GrowerParams } from '../../../engines/tabular/grower';
import { Prng } from '../../../engines/tabular/prng';

const lambda = 0.5;

function score(g: number, h: number): number {
  return (g * g) / (h + lambda);
}

/** Best gain over every threshold between distinct values x every missing direction, from raw rows. */
function bruteForceNumeric(x: number[], g: number[], h: number[], minData: number): number {
  const G = g.reduce((a, b) => a + b, 0);
  const H = h.reduce((a, b) => a + b, 0);
  const vals = [...new Set(x.filter((v) => !Number.isNaN(v)))].sort((a, b) => a - b);
  let best = -Infinity;
  const cands: Array<[number, boolean]> = [];
  for (let t = 0; t < vals.length - 1; t++) for (const ml of [false, true]) cands.push([vals[t], ml]);
  cands.push([Infinity, false]); // non-missing left, missing right
  for (const [thr, missingLeft] of cands) {
    let gl = 0, hl = 0, cl = 0;
    x.forEach((v, i) => {
      const left = Number.isNaN(v) ? missingLeft : v <= thr;
      if (left) { gl += g[i]; hl += h[i]; cl++; }
    });
    const cr = x.length - cl;
    if (cl < minData || cr < minData) continue;
    const gain = score(gl, hl) + score(G - gl, H - hl) - score(G, H);
    if (gain > best) best = gain;
  }
  return best;
}

/** Best gain over every subset of categories (missing counted as one more category). */
function bruteForceCategorical(codes: number[], K: number, g: number[], h: number[]): number {
  const G = g.reduce((a, b) => a + b, 0);
  const H = h.reduce((a, b) => a + b, 0);
  let best = -Infinity;
  for (let mask = 1; mask < (1 << (K + 1)) - 1; mask++) {
    let gl = 0, hl = 0, cl = 0;
    codes.forEach((c, i) => {
      const b = Number.isNaN(c) ? K : c;
      if (mask & (1 << b)) { gl += g[i]; hl += h[i]; cl++; }
    });
    if (cl === 0 || cl === codes.length) continue;
    const gain = score(gl, hl) + score(G - gl, H - hl) - score(G, H);
    if (gain > best) best = gain;
  }
  return best;
}

function params(over: Partial<GrowerParams>): GrowerParams {
  return { ...DEFAULT_GROWER_PARAMS, lambdaL2: lambda, minDataInLeaf: 1, minHessianInLeaf: 0, ...over };
}

describe('tree grower split finding', () => {
  it('finds the same best numeric split (with missing values) as brute force', () => {
    for (let trial = 0; trial < 20; trial++) {
      const rng = new Prng(100 + trial);
      const n = 30 + rng.nextInt(30);
      const F = 3;
      const X = new Float64Array(n * F);
      const g: number[] = [];
      const h: number[] = [];
      for (let i = 0; i < n; i++) {
        for (let f = 0; f < F; f++) X[i * F + f] = rng.nextFloat() < 0.15 ? NaN : Math.round(rng.nextFloat() * 12);
        g.push(rng.nextFloat() * 2 - 1 + (X[i * F] > 6 ? 0.8 : 0));
        h.push(0.2 + rng.nextFloat());
      }
      const minData = 1 + (trial % 4);
      const info = fitBins(X, n, F, [0, 0, 0], 255, 1);
      const bins = transformBins(info, X, n, F);
      const grower = new TreeGrower(bins, n, F, info, params({ maxLeaves: 2, minDataInLeaf: minData }));
      const tree = grower.grow(Float64Array.from(g), Float64Array.from(h), Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
      let expected = -Infinity;
      for (let f = 0; f < F; f++) {
        const col = Array.from({ length: n }, (_, i) => X[i * F + f]);
        expected = Math.max(expected, bruteForceNumeric(col, g, h, minData));
      }
      expect(tree.gain[0]).toBeCloseTo(expected, 9);
      // the leaf values are the regularised Newton steps of the rows routed to them
      const sums = [[0, 0], [0, 0]];
      for (let i = 0; i < n; i++) {
        const l = leafOfBinned(tree, info, bins, i * F);
        sums[l][0] += g[i];
        sums[l][1] += h[i];
      }
      expect(tree.leafValue[0]).toBeCloseTo(-sums[0][0] / (sums[0][1] + lambda), 9);
      expect(tree.leafValue[1]).toBeCloseTo(-sums[1][0] / (sums[1][1] + lambda), 9);
    }
  });

  it('finds the best categorical subset split (gradient/hessian ordering) as brute force', () => {
    for (let trial = 0; trial < 15; trial++) {
      const rng = new Prng(500 + trial);
      const n = 60;
      const K = 6;
      const X = new Float64Array(n);
      const g: number[] = [];
      const h: number[] = [];
      const effect = Array.from({ length: K + 1 }, () => rng.nextFloat() * 2 - 1);
      for (let i = 0; i < n; i++) {
        X[i] = rng.nextFloat() < 0.1 ? NaN : rng.nextInt(K);
        const b = Number.isNaN(X[i]) ? K : X[i];
        g.push(effect[b] + rng.nextFloat() * 0.5);
        h.push(1);
      }
      const info = fitBins(X, n, 1, [K]);
      const bins = transformBins(info, X, n, 1);
      const grower = new TreeGrower(bins, n, 1, info, params({ maxLeaves: 2, catSmooth: 0, catL2: 0, minDataPerGroup: 1, maxCatToOnehot: 0, maxCatThreshold: 64 }));
      const tree = grower.grow(Float64Array.from(g), Float64Array.from(h), Uint32Array.from({ length: n }, (_, i) => i), n, Uint8Array.of(1));
      expect(tree.isCategorical[0]).toBe(true);
      expect(tree.gain[0]).toBeCloseTo(bruteForceCategorical(Array.from(X), K, g, h), 9);
      // rows are routed by set membership, missing included
      for (let i = 0; i < n; i++) {
        const b = Number.isNaN(X[i]) ? K : X[i];
        const left = (tree.catLeft[0] as Uint8Array)[b] === 1;
        expect(leafOfBinned(tree, info, bins, i)).toBe(left ? 0 : 1);
      }
    }
  });

  it('respects max leaves and min data per leaf', () => {
    const rng = new Prng(9);
    const n = 400;
    const X = Float64Array.from({ length: n * 2 }, () => rng.nextFloat());
    const g = Float64Array.from({ length: n }, (_, i) => Math.sin(X[i * 2] * 9) + X[i * 2 + 1]);
    const h = new Float64Array(n).fill(1);
    const info = fitBins(X, n, 2, [0, 0]);
    const bins = transformBins(info, X, n, 2);
    const grower = new TreeGrower(bins, n, 2, info, params({ maxLeaves: 7, minDataInLeaf: 25 }));
    const tree = grower.grow(g, h, Uint32Array.from({ length: n }, (_, i) => i), n, Uint8Array.of(1, 1));
    expect(tree.leafValue.length).toBe(7);
    expect(Math.min(...tree.leafCount)).toBeGreaterThanOrEqual(25);
    expect(tree.leafCount.reduce((a, b) => a + b, 0)).toBe(n);
  });
});

describe('routing rows through a grown tree', () => {
  it('puts every row in the same leaf through the partition, the tree walk and the routing tables', () => {
    for (let trial = 0; trial < 10; trial++) {
      const rng = new Prng(900 + trial);
      const n = 500;
      const F = 4;
      const X = new Float64Array(n * F);
      for (let i = 0; i < n; i++) {
        X[i * F] = rng.nextFloat() < 0.1 ? NaN : rng.nextFloat() * 10;
        X[i * F + 1] = rng.nextFloat() < 0.05 ? NaN : rng.nextInt(8);
        X[i * F + 2] = Math.round(rng.nextFloat() * 50);
        X[i * F + 3] = rng.nextFloat() < 0.2 ? NaN : rng.nextFloat();
      }
      const info = fitBins(X, n, F, [0, 8, 0, 0], 255, 1);
      const bins = transformBins(info, X, n, F);
      const g = Float64Array.from({ length: n }, (_, i) => Math.sin(X[i * F + 2] / 7) + (X[i * F + 1] % 3 === 0 ? 1 : -0.5) + rng.nextFloat() * 0.3);
      const h = new Float64Array(n).fill(1);
      // a bagged sample: the partition only sees these rows
      const rows = new Uint32Array(n);
      const m = rng.sampleIndices(rows, n, 0.7);
      const grower = new TreeGrower(bins, n, F, info, params({ maxLeaves: 15, minDataInLeaf: 5 }));
      const tree = grower.grow(g, h, rows, m, new Uint8Array(F).fill(1));
      expect(tree.feature.length).toBe(14);
      const router = routerOf(tree, info);
      const sampled = new Set(Array.from(rows.subarray(0, m)));
      for (let i = 0; i < n; i++) {
        const walked = leafOfBinned(tree, info, bins, i * F);
        expect(leafOfRouted(router, bins, i * F)).toBe(walked);
        expect(grower.rowLeaf[i]).toBe(sampled.has(i) ? walked : -1);
      }
    }
  });
});

describe('bagging sampler', () => {
  it('keeps exactly the rows whose uniform draw is below the fraction, as one draw per row would', () => {
    for (const fraction of [0.1, 0.5, 0.8, 1]) {
      const a = new Prng(77);
      const b = new Prng(77);
      const out = new Uint32Array(1000);
      const m = a.sampleIndices(out, 1000, fraction);
      const expected: number[] = [];
      for (let i = 0; i < 1000; i++) if (b.nextFloat() < fraction) expected.push(i);
      expect(Array.from(out.subarray(0, m))).toEqual(expected);
      // both generators are in the same state afterwards
      expect(a.nextUint32()).toBe(b.nextUint32());
    }
  });
});

describe('split search from rows for small leaves', () => {
  it('gives every split of a grown tree the best gain over the rows of its node, as brute force', () => {
    for (let trial = 0; trial < 6; trial++) {
      const rng = new Prng(1300 + trial);
      // continuous values give many bins, so leaves of up to 64 rows search their splits from their rows
      const n = 240;
      const F = 3;
      const X = new Float64Array(n * F);
      const g: number[] = [];
      const h: number[] = [];
      for (let i = 0; i < n; i++) {
        for (let f = 0; f < F; f++) X[i * F + f] = rng.nextFloat() < 0.1 ? NaN : rng.nextFloat() * 100;
        g.push(Math.sin(X[i * F] / 9 || 0) + (X[i * F + 1] > 50 ? 0.7 : -0.3) + rng.nextFloat() * 0.5 - 0.25);
        h.push(0.3 + rng.nextFloat());
      }
      const minData = 2 + (trial % 3);
      const info = fitBins(X, n, F, [0, 0, 0], 255, 1);
      expect(Math.min(...info.numBins)).toBeGreaterThan(150);
      const bins = transformBins(info, X, n, F);
      const grower = new TreeGrower(bins, n, F, info, params({ maxLeaves: 24, minDataInLeaf: minData }));
      const tree = grower.grow(Float64Array.from(g), Float64Array.from(h), Uint32Array.from({ length: n }, (_, i) => i), n, new Uint8Array(F).fill(1));
      expect(tree.feature.length).toBe(23);
      // rows reaching each node
      const reach: number[][] = tree.feature.map(() => []);
      for (let i = 0; i < n; i++) {
        let node = 0;
        while (node >= 0) {
          reach[node].push(i);
          const b = bins[i * F + tree.feature[node]];
          const left = b === info.numBins[tree.feature[node]] ? tree.defaultLeft[node] : b <= tree.thresholdBin[node];
          node = left ? tree.left[node] : tree.right[node];
        }
      }
      const small = reach.filter((r) => r.length <= 64).length;
      expect(small).toBeGreaterThan(5);
      tree.feature.forEach((_, node) => {
        const rows = reach[node];
        let expected = -Infinity;
        for (let f = 0; f < F; f++) {
          expected = Math.max(expected, bruteForceNumeric(rows.map((i) => X[i * F + f]), rows.map((i) => g[i]), rows.map((i) => h[i]), minData));
        }
        expect(tree.gain[node]).toBeCloseTo(expected, 8);
      });
    }
  });
});

describe('subtractMarkedBins', () => {
  it('leaves the parent bit for bit as subtracting every bin does, where the unmarked bins of the child hold +0', () => {
    const rng = new Prng(5);
    const numBins = [3, 40, 255, 7];
    const offsets = new Int32Array(numBins.length + 1);
    for (let f = 0; f < numBins.length; f++) offsets[f + 1] = offsets[f] + numBins[f] + 1;
    const slots = offsets[numBins.length] * 3;
    for (let trial = 0; trial < 20; trial++) {
      const parent = new Float64Array(slots);
      for (let j = 0; j < slots; j++) parent[j] = rng.nextFloat() < 0.3 ? (rng.nextFloat() < 0.5 ? -0 : 0) : (rng.nextFloat() - 0.5) * 10;
      const child = new Float64Array(slots);
      // features 0, 2, 3 active (feature 1 inactive); each active feature's child rows fall in a few bins
      const active = Int32Array.of(0, 2, 3);
      const bits = new Int32Array(active.length * 8);
      for (let a = 0; a < active.length; a++) {
        const f = active[a];
        for (let r = 0; r < 1 + trial; r++) {
          const b = rng.nextInt(numBins[f] + 1);
          bits[a * 8 + (b >> 5)] |= 1 << (b & 31);
          const j = (offsets[f] + b) * 3;
          // a bin's sums may be -0 or equal the parent's (x - x), its count is positive
          child[j] = rng.nextFloat() < 0.2 ? -0 : rng.nextFloat() < 0.2 ? parent[j] : (rng.nextFloat() - 0.5) * 10;
          child[j + 1] = rng.nextFloat();
          child[j + 2] = 1 + rng.nextInt(5);
        }
      }
      const ref = parent.slice();
      for (const f of active) for (let j = offsets[f] * 3; j < offsets[f + 1] * 3; j++) ref[j] -= child[j];
      subtractMarkedBins(parent, child, bits, offsets, active, active.length);
      for (let j = 0; j < slots; j++) expect(Object.is(parent[j], ref[j])).toBe(true);
    }
  });
});
