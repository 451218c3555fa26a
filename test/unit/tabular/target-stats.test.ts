import { fitBins, transformBins } from '../../../engines/tabular/binning';
import { DEFAULT_GROWER_PARAMS, outOfBagCategoryRatios, TreeGrower } from '../../../engines/tabular/grower';
import { Prng } from '../../../engines/tabular/prng';

/** n rows, one numeric feature and one categorical feature of `K` categories (code 5 is rare). */
function data(n: number, K: number, seed: number) {
  const rng = new Prng(seed);
  const F = 2;
  const X = new Float64Array(n * F);
  const grad = new Float64Array(n);
  const hess = new Float64Array(n).fill(1);
  for (let i = 0; i < n; i++) {
    X[i * F] = rng.nextFloat();
    X[i * F + 1] = rng.nextFloat() < 0.05 ? NaN : rng.nextInt(K);
    grad[i] = rng.nextFloat() - 0.5 + (X[i * F + 1] === 3 ? 1 : 0);
  }
  const info = fitBins(X, n, F, [0, K], 255, 1);
  const bins = transformBins(info, X, n, F);
  const offsets = new Int32Array(F + 1);
  for (let f = 0; f < F; f++) offsets[f + 1] = offsets[f] + info.numBins[f] + 1;
  const inBag = Uint8Array.from({ length: n }, () => (rng.nextFloat() < 0.8 ? 1 : 0));
  return { X, F, info, bins, offsets, grad, hess, inBag };
}

describe('category target statistics from out-of-bag rows', () => {
  const n = 300;
  const K = 8;
  const d = data(n, K, 1);
  const ratios = (grad: Float64Array, inBag = d.inBag): Float64Array => {
    const out = new Float64Array(d.offsets[d.F]);
    outOfBagCategoryRatios(d.bins, n, d.F, d.offsets, [1], grad, d.hess, inBag, 10, out, new Float64Array(d.offsets[d.F]));
    return out.slice(d.offsets[1], d.offsets[2]);
  };

  it('are the smoothed gradient ratios of each category over the out-of-bag rows', () => {
    const r = ratios(d.grad);
    for (let b = 0; b <= d.info.numBins[1]; b++) {
      let g = 0;
      let h = 0;
      for (let i = 0; i < n; i++) {
        if (d.inBag[i] || d.bins[i * d.F + 1] !== b) continue;
        g += d.grad[i];
        h += d.hess[i];
      }
      expect(r[b]).toBeCloseTo(g / (h + 10), 12);
    }
  });

  it("never see the target of a row the tree is fitted on (its own target cannot leak into its category's order)", () => {
    const before = ratios(d.grad);
    const changed = Float64Array.from(d.grad);
    for (let i = 0; i < n; i++) if (d.inBag[i]) changed[i] = 1000 * (i % 3 - 1);
    expect(Array.from(ratios(changed))).toEqual(Array.from(before));
    // and they do move with the out-of-bag rows' targets
    const oob = Float64Array.from(d.grad);
    const firstOut = d.inBag.findIndex((v) => v === 0);
    oob[firstOut] += 50;
    expect(Array.from(ratios(oob))).not.toEqual(Array.from(before));
  });

  it('order the categories of a tree grown with catOrderFrom outOfBag, which still learns the signal', () => {
    const grower = new TreeGrower(d.bins, n, d.F, d.info, { ...DEFAULT_GROWER_PARAMS, minDataInLeaf: 5, catOrderFrom: 'outOfBag', maxCatToOnehot: 2 });
    const rows = new Uint32Array(n);
    let m = 0;
    for (let i = 0; i < n; i++) if (d.inBag[i]) rows[m++] = i;
    const tree = grower.grow(d.grad, d.hess, rows, m, Uint8Array.of(1, 1));
    // category 3 carries the signal: the first split isolates it on its own side
    expect(tree.isCategorical[0]).toBe(true);
    const left = tree.catLeft[0] as Uint8Array;
    const side3 = left[3];
    const others = [0, 1, 2, 4, 5, 6, 7].filter((c) => left[c] === side3);
    expect(others).toEqual([]);
  });
});
