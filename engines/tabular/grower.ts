/**
 * Leaf-wise tree grower on gradient histograms. It knows nothing of the loss: it receives
 * gradients and hessians and returns a tree whose leaf values are -G / (H + lambda).
 *
 * Binned data is row-major (n x F, Uint8Array). Feature f has numBins[f] value bins and a missing
 * bin at index numBins[f]. Histograms hold (grad, hess, count) triples per bin; the larger child's
 * histogram is obtained by subtraction from the parent's.
 */
import type { BinnedFeatureInfo } from './binning';

export interface GrowerParams {
  maxLeaves: number;
  maxDepth: number;
  minDataInLeaf: number;
  minHessianInLeaf: number;
  lambdaL2: number;
  minGainToSplit: number;
  /** categorical: smoothing added to the hessian when ordering categories by G/H */
  catSmooth: number;
  /** categorical: extra L2 used when evaluating categorical splits */
  catL2: number;
  /** categorical: maximum number of categories on the left side */
  maxCatThreshold: number;
  /** categorical: categories with fewer rows never go to the left set */
  minDataPerGroup: number;
  /** categorical: up to this many categories, only one-vs-rest splits are tried */
  maxCatToOnehot: number;
  /**
   * categorical: where the order of categories that splits cut comes from. 'node': each node's own
   * G/H ratios (LightGBM). 'outOfBag': one order per tree, from target statistics (the smoothed
   * G/H ratio of each category) over the rows left out of the round's bagging sample, so no row's
   * own target decides how its category is ordered; small nodes can no longer reorder categories to
   * fit their few rows. Needs subsample < 1; with no out-of-bag rows it falls back to 'node'.
   */
  catOrderFrom?: 'node' | 'outOfBag';
  /**
   * Symmetric (oblivious) trees, as CatBoost grows them: every node of a level splits on the same
   * feature and threshold, chosen by the gain summed over all nodes of the level; the tree has
   * maxDepth levels (2^maxDepth leaves) unless no split gains. minDataInLeaf does not apply (a
   * split is shared by every node of its level; lambdaL2 shrinks small leaves instead).
   * Categorical features are cut in one order per tree (their G/H ratio at the root).
   */
  symmetric?: boolean;
  /**
   * Engine 4 (gbdt.ts): one model of both tree shapes. Every `symmetricEvery`-th round grows
   * symmetric trees (depth `symmetricDepth`, L2 `symmetricL2`) instead of the grower's own; unset or 0:
   * never. The boosting loop keeps one grower per shape.
   */
  symmetricEvery?: number;
  symmetricHybridDepth?: number;
  symmetricHybridL2?: number;
  /** experiments: the symmetric rounds' learning rate as a multiple of the model's (default 1) */
  symmetricHybridLrScale?: number;
}

/** Levels of a symmetric tree: maxDepth (6 when unlimited), at most 10 (1,024 leaves). */
export function symmetricDepth(params: Pick<GrowerParams, 'maxDepth'>): number {
  return Math.max(0, Math.min(params.maxDepth > 0 ? params.maxDepth : 6, 10));
}

export const DEFAULT_GROWER_PARAMS: GrowerParams = {
  maxLeaves: 31,
  maxDepth: 0,
  minDataInLeaf: 20,
  minHessianInLeaf: 1e-3,
  lambdaL2: 0,
  minGainToSplit: 0,
  catSmooth: 10,
  catL2: 10,
  maxCatThreshold: 32,
  minDataPerGroup: 10,
  maxCatToOnehot: 4,
};

/**
 * Target statistics of categories without a row's own target: for each categorical feature in `cats`
 * and each of its bins, the smoothed gradient ratio G / (H + smooth) over the rows with inBag[i] = 0
 * only (the rows the tree is not fitted on). With squared error and the first tree this is minus the
 * smoothed mean target of the category. Written to out[offsets[f] + bin]; `hsum` is scratch.
 */
export function outOfBagCategoryRatios(
  bins: Uint8Array, n: number, F: number, offsets: Int32Array, cats: readonly number[],
  grad: Float64Array, hess: Float64Array, inBag: Uint8Array, smooth: number, out: Float64Array, hsum: Float64Array,
): void {
  for (const f of cats) {
    out.fill(0, offsets[f], offsets[f + 1]);
    hsum.fill(0, offsets[f], offsets[f + 1]);
  }
  for (let i = 0; i < n; i++) {
    if (inBag[i]) continue;
    for (const f of cats) {
      const j = offsets[f] + bins[i * F + f];
      out[j] += grad[i];
      hsum[j] += hess[i];
    }
  }
  for (const f of cats) for (let j = offsets[f]; j < offsets[f + 1]; j++) out[j] = out[j] / (hsum[j] + smooth);
}

/** Tree in building form. Child pointers: >= 0 internal node, < 0 leaf ~index. */
export interface BuiltTree {
  feature: number[];
  thresholdBin: number[];
  defaultLeft: boolean[];
  isCategorical: boolean[];
  /** categorical: membership per bin (length numBins+1, includes the missing bin) of the left set */
  catLeft: (Uint8Array | null)[];
  left: number[];
  right: number[];
  gain: number[];
  leafValue: number[];
  leafCount: number[];
}

export interface SplitInfo {
  gain: number;
  feature: number;
  bin: number;
  defaultLeft: boolean;
  isCategorical: boolean;
  catLeft: Uint8Array | null;
  lg: number;
  lh: number;
  lc: number;
}

interface LeafState {
  start: number;
  end: number;
  g: number;
  h: number;
  c: number;
  depth: number;
  hist: Float64Array | null;
  /** hist holds the sums of the leaf's own rows, added in row order (built from them, not by subtraction) */
  exact: boolean;
  /** hist's empty bins hold exactly +0: it is exact, or its parent's exact histogram minus its sibling's */
  zeroEmpty: boolean;
  split: SplitInfo | null;
  parentNode: number;
  isLeft: boolean;
}

/*
 * Histogram building, four rows at a time: for each feature the four rows' updates follow each other,
 * so the CPU overlaps four independent read-add-write chains instead of waiting on one (about 25%
 * faster in V8). Each bin still receives its rows' values in row order (the rows of a group are added
 * in order, feature by feature, and every bin belongs to one feature), so every sum is bit-identical
 * to a row-by-row loop. `slots` holds 3 x (offsets[f] + bin), the index of the bin's gradient.
 */
function histAll(slots: Uint16Array | Uint32Array, F: number, idx: Uint32Array, start: number, end: number, grad: Float64Array, hess: Float64Array, hist: Float64Array): void {
  let k = start;
  for (; k + 3 < end; k += 4) {
    const i0 = idx[k];
    const i1 = idx[k + 1];
    const i2 = idx[k + 2];
    const i3 = idx[k + 3];
    const g0 = grad[i0], h0 = hess[i0], b0 = i0 * F;
    const g1 = grad[i1], h1 = hess[i1], b1 = i1 * F;
    const g2 = grad[i2], h2 = hess[i2], b2 = i2 * F;
    const g3 = grad[i3], h3 = hess[i3], b3 = i3 * F;
    for (let f = 0; f < F; f++) {
      let j = slots[b0 + f];
      hist[j] += g0;
      hist[j + 1] += h0;
      hist[j + 2] += 1;
      j = slots[b1 + f];
      hist[j] += g1;
      hist[j + 1] += h1;
      hist[j + 2] += 1;
      j = slots[b2 + f];
      hist[j] += g2;
      hist[j + 1] += h2;
      hist[j + 2] += 1;
      j = slots[b3 + f];
      hist[j] += g3;
      hist[j + 1] += h3;
      hist[j + 2] += 1;
    }
  }
  for (; k < end; k++) {
    const i = idx[k];
    const g = grad[i];
    const h = hess[i];
    const base = i * F;
    for (let f = 0; f < F; f++) {
      const j = slots[base + f];
      hist[j] += g;
      hist[j + 1] += h;
      hist[j + 2] += 1;
    }
  }
}

function histSome(slots: Uint16Array | Uint32Array, F: number, idx: Uint32Array, start: number, end: number, grad: Float64Array, hess: Float64Array, hist: Float64Array, active: Int32Array, nActive: number): void {
  let k = start;
  for (; k + 3 < end; k += 4) {
    const i0 = idx[k];
    const i1 = idx[k + 1];
    const i2 = idx[k + 2];
    const i3 = idx[k + 3];
    const g0 = grad[i0], h0 = hess[i0], b0 = i0 * F;
    const g1 = grad[i1], h1 = hess[i1], b1 = i1 * F;
    const g2 = grad[i2], h2 = hess[i2], b2 = i2 * F;
    const g3 = grad[i3], h3 = hess[i3], b3 = i3 * F;
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      let j = slots[b0 + f];
      hist[j] += g0;
      hist[j + 1] += h0;
      hist[j + 2] += 1;
      j = slots[b1 + f];
      hist[j] += g1;
      hist[j + 1] += h1;
      hist[j + 2] += 1;
      j = slots[b2 + f];
      hist[j] += g2;
      hist[j + 1] += h2;
      hist[j + 2] += 1;
      j = slots[b3 + f];
      hist[j] += g3;
      hist[j + 1] += h3;
      hist[j + 2] += 1;
    }
  }
  for (; k < end; k++) {
    const i = idx[k];
    const g = grad[i];
    const h = hess[i];
    const base = i * F;
    for (let a = 0; a < nActive; a++) {
      const j = slots[base + active[a]];
      hist[j] += g;
      hist[j + 1] += h;
      hist[j + 2] += 1;
    }
  }
}

/**
 * histSome without the counts: the gradients' and hessians' sums only, for a root whose counts are
 * known (TreeGrower.grow's rootCounts). The same additions in the same order as histSome's.
 */
function histSumsSome(slots: Uint16Array | Uint32Array, F: number, idx: Uint32Array, start: number, end: number, grad: Float64Array, hess: Float64Array, hist: Float64Array, active: Int32Array, nActive: number): void {
  let k = start;
  for (; k + 3 < end; k += 4) {
    const i0 = idx[k];
    const i1 = idx[k + 1];
    const i2 = idx[k + 2];
    const i3 = idx[k + 3];
    const g0 = grad[i0], h0 = hess[i0], b0 = i0 * F;
    const g1 = grad[i1], h1 = hess[i1], b1 = i1 * F;
    const g2 = grad[i2], h2 = hess[i2], b2 = i2 * F;
    const g3 = grad[i3], h3 = hess[i3], b3 = i3 * F;
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      let j = slots[b0 + f];
      hist[j] += g0;
      hist[j + 1] += h0;
      j = slots[b1 + f];
      hist[j] += g1;
      hist[j + 1] += h1;
      j = slots[b2 + f];
      hist[j] += g2;
      hist[j + 1] += h2;
      j = slots[b3 + f];
      hist[j] += g3;
      hist[j + 1] += h3;
    }
  }
  for (; k < end; k++) {
    const i = idx[k];
    const g = grad[i];
    const h = hess[i];
    const base = i * F;
    for (let a = 0; a < nActive; a++) {
      const j = slots[base + active[a]];
      hist[j] += g;
      hist[j + 1] += h;
    }
  }
}

/** parent -= child over the histogram entries [from[r], to[r]) of every run r < nRuns (TreeGrower.setActive). */
function subtractRuns(parent: Float64Array, child: Float64Array, from: Int32Array, to: Int32Array, nRuns: number): void {
  for (let r = 0; r < nRuns; r++) {
    const end = to[r];
    for (let j = from[r]; j < end; j++) parent[j] -= child[j];
  }
}

/**
 * subtractRuns over the bins that a child's rows fall in only, each once: `bits` holds per active
 * feature a a bitmap of those bins (8 words, 256 bins, from a * 8; TreeGrower.markBins). The child's
 * other bins were never added to and hold exactly +0, and x - (+0) is x bit for bit (-0 included), so
 * the parent ends bit-identical to subtractRuns's; a child of few rows costs its bins, not every bin.
 */
export function subtractMarkedBins(parent: Float64Array, child: Float64Array, bits: Int32Array, offsets: Int32Array, active: Int32Array, nActive: number): void {
  for (let a = 0; a < nActive; a++) {
    const off = offsets[active[a]] * 3;
    const bb = a * 8;
    for (let w = 0; w < 8; w++) {
      let x = bits[bb + w];
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const j = off + ((w << 5) + 31 - Math.clz32(low)) * 3;
        parent[j] -= child[j];
        parent[j + 1] -= child[j + 1];
        parent[j + 2] -= child[j + 2];
      }
    }
  }
}

/*
 * Root histograms of several classes at once, by gathering instead of scattering (TreeGrower.rootsTogether).
 * A multiclass round grows one tree per class on the same rows and features, so the rows can be
 * grouped by bin once (`lists`: per active feature a, the rows of bin b at lists[a * m + starts[a * 258 + b]
 * .. a * m + starts[a * 258 + b + 1]), in their sample order), and each bin's sums are then running
 * sums in registers over its rows, for up to four classes side by side (independent addition chains).
 * A histogram pass adds each row's values into the bin in memory (a load and a store per sum). The
 * additions are the same, in the same order: a bin's rows in sample order, from +0, so every sum is
 * bit-identical to histAll's and histSome's; a bin's count is its number of rows, as their sum of 1s is.
 * Every (gradient, hessian, count) triple of the active features is written, empty bins with +0.
 */
function gatherRoots4(lists: Uint32Array, starts: Int32Array, m: number, offsets: Int32Array, numBins: ArrayLike<number>, active: Int32Array, nActive: number, grad: Float64Array, hess: Float64Array, o0: number, o1: number, o2: number, o3: number, H0: Float64Array, H1: Float64Array, H2: Float64Array, H3: Float64Array): void {
  for (let a = 0; a < nActive; a++) {
    const f = active[a];
    const sb = a * 258;
    const lo = a * m;
    const off = offsets[f] * 3;
    for (let b = 0; b <= numBins[f]; b++) {
      let g0 = 0, h0 = 0, g1 = 0, h1 = 0, g2 = 0, h2 = 0, g3 = 0, h3 = 0;
      const from = lo + starts[sb + b];
      const to = lo + starts[sb + b + 1];
      for (let q = from; q < to; q++) {
        const i = lists[q];
        g0 += grad[o0 + i];
        h0 += hess[o0 + i];
        g1 += grad[o1 + i];
        h1 += hess[o1 + i];
        g2 += grad[o2 + i];
        h2 += hess[o2 + i];
        g3 += grad[o3 + i];
        h3 += hess[o3 + i];
      }
      const j = off + b * 3;
      const c = to - from;
      H0[j] = g0;
      H0[j + 1] = h0;
      H0[j + 2] = c;
      H1[j] = g1;
      H1[j + 1] = h1;
      H1[j + 2] = c;
      H2[j] = g2;
      H2[j + 1] = h2;
      H2[j + 2] = c;
      H3[j] = g3;
      H3[j + 1] = h3;
      H3[j + 2] = c;
    }
  }
}

/** gatherRoots4 for two classes (the classes left over after the blocks of four). */
function gatherRoots2(lists: Uint32Array, starts: Int32Array, m: number, offsets: Int32Array, numBins: ArrayLike<number>, active: Int32Array, nActive: number, grad: Float64Array, hess: Float64Array, o0: number, o1: number, H0: Float64Array, H1: Float64Array): void {
  for (let a = 0; a < nActive; a++) {
    const f = active[a];
    const sb = a * 258;
    const lo = a * m;
    const off = offsets[f] * 3;
    for (let b = 0; b <= numBins[f]; b++) {
      let g0 = 0, h0 = 0, g1 = 0, h1 = 0;
      const from = lo + starts[sb + b];
      const to = lo + starts[sb + b + 1];
      for (let q = from; q < to; q++) {
        const i = lists[q];
        g0 += grad[o0 + i];
        h0 += hess[o0 + i];
        g1 += grad[o1 + i];
        h1 += hess[o1 + i];
      }
      const j = off + b * 3;
      const c = to - from;
      H0[j] = g0;
      H0[j + 1] = h0;
      H0[j + 2] = c;
      H1[j] = g1;
      H1[j + 1] = h1;
      H1[j + 2] = c;
    }
  }
}

/** gatherRoots4 for one class (the class left over after the blocks of four and two). */
function gatherRoots1(lists: Uint32Array, starts: Int32Array, m: number, offsets: Int32Array, numBins: ArrayLike<number>, active: Int32Array, nActive: number, grad: Float64Array, hess: Float64Array, o0: number, H0: Float64Array): void {
  for (let a = 0; a < nActive; a++) {
    const f = active[a];
    const sb = a * 258;
    const lo = a * m;
    const off = offsets[f] * 3;
    for (let b = 0; b <= numBins[f]; b++) {
      let g0 = 0, h0 = 0;
      const from = lo + starts[sb + b];
      const to = lo + starts[sb + b + 1];
      for (let q = from; q < to; q++) {
        const i = lists[q];
        g0 += grad[o0 + i];
        h0 += hess[o0 + i];
      }
      const j = off + b * 3;
      H0[j] = g0;
      H0[j + 1] = h0;
      H0[j + 2] = to - from;
    }
  }
}

/*
 * Partitions are branch-free: every row is written to both outputs and only the cursor of the side it
 * belongs to advances. Left/right is a coin toss for the CPU's branch predictor, so a branch per row
 * mispredicts half the time, while the extra store is cheap (partitions were ~10% of training time in
 * profiles). The in-place write is safe because the left cursor never passes the read cursor.
 * The side comes from a table "bin goes left" (a comparison can compile to a branch), and the bins from
 * a column-major copy of the binned rows: a node's rows are in increasing order, so a partition reads
 * one feature's column forward instead of one byte from every row.
 */
function partitionByTable(idx: Uint32Array, tmp: Uint32Array, cols: Uint8Array, colOff: number, start: number, end: number, table: Uint8Array): number {
  let nl = 0;
  let nr = 0;
  for (let k = start; k < end; k++) {
    const i = idx[k];
    const goLeft = table[cols[colOff + i]];
    idx[start + nl] = i;
    tmp[nr] = i;
    nl += goLeft;
    nr += 1 - goLeft;
  }
  // the right side back after the left one: a block copy (memmove) beats the element loop once it
  // is more than a few dozen rows (the subarray view costs an allocation)
  if (nr > 32) idx.set(tmp.subarray(0, nr), start + nl);
  else for (let k = 0; k < nr; k++) idx[start + nl + k] = tmp[k];
  return nl;
}

/**
 * The goes-left table of a numeric split (256 entries): value bins up to `thr` go left, the missing
 * bin (above every threshold) goes left when `defaultLeft`.
 */
function numericTable(table: Uint8Array, thr: number, missingBin: number, defaultLeft: boolean): Uint8Array {
  table.fill(0);
  for (let b = 0; b <= thr && b < missingBin; b++) table[b] = 1;
  table[missingBin] = defaultLeft ? 1 : 0;
  return table;
}

/** Column-major copy (F x n) of row-major binned rows (n x F). */
export function binColumns(bins: Uint8Array, n: number, F: number): Uint8Array {
  const cols = new Uint8Array(n * F);
  for (let i = 0; i < n; i++) for (let f = 0; f < F; f++) cols[f * n + i] = bins[i * F + f];
  return cols;
}

/** What a tree does with the counts of its root histogram (TreeGrower.buildRoot). */
export type RootCounts = 'none' | 'keep' | 'reuse';

/** A node of a symmetric tree being grown: its rows idx[start..end), sums and histogram. */
interface SymmetricSegment {
  start: number;
  end: number;
  g: number;
  h: number;
  c: number;
  hist: Float64Array | null;
}

/** The split every node of one level of a symmetric tree takes, with its summed gain. */
interface LevelSplit {
  feature: number;
  bin: number;
  defaultLeft: boolean;
  catLeft: Uint8Array | null;
  gain: number;
}

export class TreeGrower {
  readonly offsets: Int32Array;
  readonly totalBins: number;
  private readonly idx: Uint32Array;
  private readonly tmp: Uint32Array;
  private readonly pool: Float64Array[] = [];
  private readonly catOrder: Int32Array;
  /** per row and feature: 3 x (offsets[f] + bin), where the bin's (gradient, hessian, count) start, precomputed */
  private readonly slots: Uint16Array | Uint32Array;
  /** the binned rows column-major (binColumns), for partitions */
  readonly cols: Uint8Array;
  private readonly n: number;
  /** partitions' goes-left table of a numeric split */
  private readonly goLeft = new Uint8Array(256);
  /**
   * After grow(): leaf index of every row of the sample, -1 for rows outside it (built when asked,
   * from the leaves' row ranges: the boosting loop reads the ranges, addLeafValues).
   */
  get rowLeaf(): Int32Array {
    if (this.rowLeafStale) {
      const out = this.rowLeafBuf;
      out.fill(-1);
      for (let l = 0; l < this.nLeaves; l++) for (let k = this.leafStart[l]; k < this.leafEnd[l]; k++) out[this.idx[k]] = l;
      this.rowLeafStale = false;
    }
    return this.rowLeafBuf;
  }

  private readonly rowLeafBuf: Int32Array;
  private rowLeafStale = false;
  /** the last tree's leaves: leaf l holds the rows idx[leafStart[l]..leafEnd[l]) */
  private leafStart = new Int32Array(0);
  private leafEnd = new Int32Array(0);
  private nLeaves = 0;

  private setLeafRanges(ranges: ReadonlyArray<{ start: number; end: number }>): void {
    const L = ranges.length;
    if (this.leafStart.length < L) {
      this.leafStart = new Int32Array(Math.max(L, 2 * this.leafStart.length));
      this.leafEnd = new Int32Array(this.leafStart.length);
    }
    for (let l = 0; l < L; l++) {
      this.leafStart[l] = ranges[l].start;
      this.leafEnd[l] = ranges[l].end;
    }
    this.nLeaves = L;
    this.rowLeafStale = true;
  }

  /**
   * out[i * stride + offset] += values[leaf of row i] for the rows of the last tree's sample, leaf by
   * leaf: the same one addition per row as through rowLeaf, without building it.
   */
  addLeafValues(out: Float64Array, stride: number, offset: number, values: ArrayLike<number>): void {
    const idx = this.idx;
    for (let l = 0; l < this.nLeaves; l++) {
      const v = values[l];
      const end = this.leafEnd[l];
      for (let k = this.leafStart[l]; k < end; k++) out[idx[k] * stride + offset] += v;
    }
  }
  private readonly catRatio: Float64Array;

  constructor(
    private readonly bins: Uint8Array,
    n: number,
    private readonly F: number,
    private readonly info: BinnedFeatureInfo,
    private readonly params: GrowerParams,
  ) {
    this.offsets = new Int32Array(F + 1);
    for (let f = 0; f < F; f++) this.offsets[f + 1] = this.offsets[f] + info.numBins[f] + 1;
    this.totalBins = this.offsets[F];
    this.idx = new Uint32Array(n);
    this.tmp = new Uint32Array(n);
    this.n = n;
    this.cols = binColumns(bins, n, F);
    this.rowLeafBuf = new Int32Array(n);
    this.slots = this.totalBins * 3 < 65536 ? new Uint16Array(n * F) : new Uint32Array(n * F);
    for (let i = 0; i < n; i++) for (let f = 0; f < F; f++) this.slots[i * F + f] = (this.offsets[f] + bins[i * F + f]) * 3;
    this.catOrder = new Int32Array(257);
    this.catRatio = new Float64Array(257);
    this.treeCatRatio = new Float64Array(this.totalBins);
    this.treeCatHess = new Float64Array(this.totalBins);
    this.inBag = new Uint8Array(n);
    this.active = new Int32Array(F);
    this.runFrom = new Int32Array(F);
    this.runTo = new Int32Array(F);
    // sorting a leaf's rows beats scanning every bin while the leaf has fewer rows than about half
    // the bins of a numeric feature (capped: the sort was an insertion sort). The threshold is part of
    // the models (it decides which leaves get a histogram by subtraction, whose sums differ in
    // rounding from those of their rows), so it stays although bestSplitFromRows no longer sorts.
    let numericBins = 0;
    let numeric = 0;
    for (let f = 0; f < F; f++) {
      if (info.isCategorical[f]) continue;
      numericBins += info.numBins[f];
      numeric++;
    }
    this.rowSplitMax = numeric === 0 ? 0 : Math.min(64, Math.floor(numericBins / numeric / 2));
  }

  /** catOrderFrom 'outOfBag': per bin, the category's smoothed ratio over the out-of-bag rows */
  private readonly treeCatRatio: Float64Array;
  private readonly treeCatHess: Float64Array;
  private readonly inBag: Uint8Array;
  private useTreeCatOrder = false;

  /** Target statistics of the categories over the rows not in the round's sample (see catOrderFrom). */
  private categoryStatsOutOfBag(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number, active: Int32Array, nActive: number): boolean {
    const n = this.idx.length;
    if (m >= n) return false;
    const cats: number[] = [];
    for (let a = 0; a < nActive; a++) if (this.info.isCategorical[active[a]]) cats.push(active[a]);
    if (cats.length === 0) return false;
    const inBag = this.inBag;
    inBag.fill(0);
    for (let k = 0; k < m; k++) inBag[rows[k]] = 1;
    outOfBagCategoryRatios(this.bins, n, this.F, this.offsets, cats, grad, hess, inBag, this.params.catSmooth, this.treeCatRatio, this.treeCatHess);
    return true;
  }

  /** leaves of at most this many rows search their splits from their rows (bestSplitFromRows) */
  private readonly rowSplitMax: number;
  private readonly rowStats = new Float64Array(257 * 3);
  /** growLevels' categorical ratios at the root */
  private readonly rankRatio = new Float64Array(257);
  /** bestSplitFromRows' bitmap of the bins seen (256 bits) and list of them */
  private readonly rowSeen = new Int32Array(8);
  private readonly rowList = new Int32Array(257);
  /**
   * growSymmetricFast's candidate positions per active feature a and bin b, at a * 257 + b: the
   * position t of b in the feature's cut order (the bin for numeric features, its rank for
   * categorical ones), -1 where b is never a cut's last bin (the missing bin of numeric features,
   * the last rank of categorical ones). Set at the root of every tree.
   */
  private symPos = new Int32Array(0);
  private symTs = new Int32Array(0);
  private symSparse = new Uint8Array(0);
  private symBits = new Int32Array(0);
  /**
   * growLevels: 1 where segment si of the next level has its bins' bitmaps (markBins's, by bin, not by
   * position) in symBits at si * nActive * 8 already, marked by subtractChild.
   */
  private symGiven = new Uint8Array(0);
  private readonly symTmpBits = new Int32Array(8);

  private symPositions(catRank: Map<number, Int32Array>, active: Int32Array, nActive: number): void {
    if (this.symPos.length < nActive * 257) this.symPos = new Int32Array(this.F * 257);
    const pos = this.symPos;
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      const nb = this.info.numBins[f];
      const rank = catRank.get(f);
      pos.fill(-1, a * 257, a * 257 + 257);
      for (let t = 0; t < nb; t++) pos[a * 257 + (rank ? rank[t] : t)] = t;
    }
  }

  /** growSymmetricFast's buffers */
  private symGainR = new Float64Array(0);
  private symGainL = new Float64Array(0);
  private symMissing = new Uint8Array(0);
  /** gradients and hessians of the tree being grown */
  private grad: Float64Array = new Float64Array(0);
  private hess: Float64Array = new Float64Array(0);

  /** features of the tree being grown; histograms are only read and written for these */
  private active: Int32Array;
  private nActive = 0;

  /** histogram slots (bins) of the active features */
  private activeSlots = 0;

  /**
   * The active features' histogram entries as runs [runFrom[r], runTo[r]) of consecutive features
   * (nRuns of them): what takeHist clears and subtractChild subtracts, one run at a time instead of
   * one feature at a time (the same entries; a feature is a few bins, a run with colsample 0.8 several).
   */
  private runFrom: Int32Array;
  private runTo: Int32Array;
  private nRuns = 0;

  private setActive(featureMask: Uint8Array): { active: Int32Array; nActive: number } {
    this.nActive = 0;
    this.activeSlots = 0;
    this.nRuns = 0;
    this.bitsOwner = null;
    const offsets = this.offsets;
    for (let f = 0; f < this.F; f++) {
      if (!featureMask[f]) continue;
      this.active[this.nActive++] = f;
      this.activeSlots += offsets[f + 1] - offsets[f];
      if (this.nRuns > 0 && this.runTo[this.nRuns - 1] === offsets[f] * 3) this.runTo[this.nRuns - 1] = offsets[f + 1] * 3;
      else {
        this.runFrom[this.nRuns] = offsets[f] * 3;
        this.runTo[this.nRuns++] = offsets[f + 1] * 3;
      }
    }
    return { active: this.active, nActive: this.nActive };
  }

  /**
   * parent -= child, where child is the histogram of the rows idx[start..end): bin by bin, or from the
   * child's bins when its rows are few against the bins (same result bit for bit, see subtractMarkedBins).
   */
  private subtractChild(parent: Float64Array, child: Float64Array, start: number, end: number, active: Int32Array, nActive: number, owner: object): void {
    // a row visit (slot, mark, branch) costs about as much as one bin's three subtractions
    if ((end - start) * nActive >= this.activeSlots) {
      subtractRuns(parent, child, this.runFrom, this.runTo, this.nRuns);
      return;
    }
    // the bitmaps of the child's bins, which findBestSplit then reuses for the child (`owner`)
    this.markBins(start, end, active, nActive, owner);
    subtractMarkedBins(parent, child, this.leafBits, this.offsets, active, nActive);
  }

  private takeHist(): Float64Array {
    const h = this.pool.pop();
    if (!h) return new Float64Array(this.totalBins * 3);
    if (this.nActive === this.F) h.fill(0);
    else for (let r = 0; r < this.nRuns; r++) h.fill(0, this.runFrom[r], this.runTo[r]);
    return h;
  }

  private buildHist(hist: Float64Array, start: number, end: number, grad: Float64Array, hess: Float64Array, active: Int32Array, nActive: number): void {
    if (nActive === this.F) histAll(this.slots, this.F, this.idx, start, end, grad, hess, hist);
    else histSome(this.slots, this.F, this.idx, start, end, grad, hess, hist, active, nActive);
  }

  /** the counts of a root histogram (every third entry), kept for the next trees of the same sample */
  private rootCounts = new Float64Array(0);

  /**
   * The root's histogram. A multiclass round grows one tree per class on the same rows and features,
   * whose roots' counts are equal: `rootCounts` 'keep' keeps this root's, 'reuse' copies those kept
   * (by a tree of the same rows and features) instead of counting the rows again.
   */
  private buildRoot(hist: Float64Array, m: number, grad: Float64Array, hess: Float64Array, active: Int32Array, nActive: number, rootCounts: RootCounts): void {
    if (rootCounts !== 'reuse') this.buildHist(hist, 0, m, grad, hess, active, nActive);
    else histSumsSome(this.slots, this.F, this.idx, 0, m, grad, hess, hist, active, nActive);
    if (rootCounts === 'none') return;
    if (this.rootCounts.length < this.totalBins * 3) this.rootCounts = new Float64Array(this.totalBins * 3);
    const counts = this.rootCounts;
    for (let a = 0; a < nActive; a++) {
      const to = this.offsets[active[a] + 1] * 3;
      if (rootCounts === 'keep') for (let j = this.offsets[active[a]] * 3 + 2; j < to; j += 3) counts[j] = hist[j];
      else for (let j = this.offsets[active[a]] * 3 + 2; j < to; j += 3) hist[j] = counts[j];
    }
  }

  /** rootsTogether's root histograms, one per class, handed over by takeGivenRoot */
  private givenRoots: Float64Array[] = [];
  /** rootsTogether's rows grouped by bin per active feature (see gatherRoots4) */
  private rootLists = new Uint32Array(0);
  private rootStarts = new Int32Array(0);

  /**
   * The root histograms of the K trees of a multiclass round (class k's gradients and hessians at
   * grad[k * n .. k * n + n)), all grown on the rows rows[0..m) with the features of `featureMask`,
   * computed together by gathering (gatherRoots4), for grow / growSymmetricFast with `givenRoot` k.
   * Returns false, computing nothing, where the rows are few against the bins: then most bins hold a
   * row or two, and a bin's loop costs more than the histogram pass's additions it replaces.
   */
  rootsTogether(grad: Float64Array, hess: Float64Array, n: number, K: number, rows: Uint32Array, m: number, featureMask: Uint8Array): boolean {
    // measured on the development sets, alternated with the histogram passes: the gathering paid on
    // letter (26 classes, 5,500 rows, 320 rows a bin: -9 % fit CPU) and marketing_income (9 classes,
    // 5,800 rows: -16 %), lost on soybean (19 classes, 350 rows: +8 %) and hypothyroid (4 classes,
    // 2,400 rows: +4 %; the grouping is shared by too few trees), and loses where most bins hold a row
    // or two (vowel, image_segment)
    if (K < 5 || m < 1000) return false;
    const { active, nActive } = this.setActive(featureMask);
    if (nActive === 0 || m * nActive < 32 * this.activeSlots) return false;
    const numBins = this.info.numBins;
    if (this.rootLists.length < nActive * m) this.rootLists = new Uint32Array(this.F * m);
    if (this.rootStarts.length < nActive * 258) this.rootStarts = new Int32Array(this.F * 258);
    const lists = this.rootLists;
    const starts = this.rootStarts;
    const cols = this.cols;
    const N = this.n;
    // a stable counting sort of the rows by bin, per active feature
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      const sb = a * 258;
      const nb = numBins[f];
      const co = f * N;
      starts.fill(0, sb, sb + nb + 2);
      for (let k = 0; k < m; k++) starts[sb + cols[co + rows[k]] + 1]++;
      for (let b = 0; b <= nb; b++) starts[sb + b + 1] += starts[sb + b];
      // starts[sb + b] serves as bin b's cursor, then is set back from bin b - 1's end
      const lo = a * m;
      for (let k = 0; k < m; k++) {
        const i = rows[k];
        lists[lo + starts[sb + cols[co + i]]++] = i;
      }
      for (let b = nb; b > 0; b--) starts[sb + b] = starts[sb + b - 1];
      starts[sb] = 0;
    }
    while (this.givenRoots.length < K) this.givenRoots.push(new Float64Array(this.totalBins * 3));
    const H = this.givenRoots;
    let k = 0;
    for (; k + 3 < K; k += 4) gatherRoots4(lists, starts, m, this.offsets, numBins, active, nActive, grad, hess, k * n, (k + 1) * n, (k + 2) * n, (k + 3) * n, H[k], H[k + 1], H[k + 2], H[k + 3]);
    if (k + 1 < K) {
      gatherRoots2(lists, starts, m, this.offsets, numBins, active, nActive, grad, hess, k * n, (k + 1) * n, H[k], H[k + 1]);
      k += 2;
    }
    if (k < K) gatherRoots1(lists, starts, m, this.offsets, numBins, active, nActive, grad, hess, k * n, H[k]);
    return true;
  }

  /** Class k's histogram from rootsTogether, for a tree's root; a pooled buffer takes its place. */
  private takeGivenRoot(k: number): Float64Array {
    const h = this.givenRoots[k];
    this.givenRoots[k] = this.pool.pop() ?? new Float64Array(this.totalBins * 3);
    return h;
  }

  /**
   * Grows one tree on the rows `rows[0..m)` with the features whose mask is 1 (`rootCounts`: see buildRoot;
   * `givenRoot` >= 0: the root's histogram is that class's from rootsTogether, with the same rows and features).
   */
  grow(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number, featureMask: Uint8Array, rootCounts: RootCounts = 'none', givenRoot = -1): BuiltTree {
    const p = this.params;
    const { active, nActive } = this.setActive(featureMask);
    this.grad = grad;
    this.hess = hess;
    this.useTreeCatOrder = p.catOrderFrom === 'outOfBag' && this.categoryStatsOutOfBag(grad, hess, rows, m, active, nActive);

    const tree: BuiltTree = {
      feature: [], thresholdBin: [], defaultLeft: [], isCategorical: [], catLeft: [], left: [], right: [], gain: [], leafValue: [], leafCount: [],
    };
    const [g0, h0] = this.loadRoot(grad, hess, rows, m);
    const root: LeafState = { start: 0, end: m, g: g0, h: h0, c: m, depth: 0, hist: givenRoot >= 0 ? this.takeGivenRoot(givenRoot) : this.takeHist(), exact: true, zeroEmpty: true, split: null, parentNode: -1, isLeft: false };
    if (givenRoot < 0) this.buildRoot(root.hist as Float64Array, m, grad, hess, active, nActive, rootCounts);
    const leaves: LeafState[] = [root];
    root.split = this.canSplit(root) ? this.findBestSplit(root, active, nActive) : null;

    while (leaves.length < p.maxLeaves) {
      let best = -1;
      let bestGain = p.minGainToSplit;
      for (let l = 0; l < leaves.length; l++) {
        const s = leaves[l].split;
        if (s && s.gain > bestGain) {
          bestGain = s.gain;
          best = l;
        }
      }
      if (best < 0) break;
      const leaf = leaves[best];
      const s = leaf.split as SplitInfo;
      // partition rows (stable)
      const nLeft = this.partition(leaf.start, leaf.end, s);
      const nodeId = tree.feature.length;
      tree.feature.push(s.feature);
      tree.thresholdBin.push(s.bin);
      tree.defaultLeft.push(s.defaultLeft);
      tree.isCategorical.push(s.isCategorical);
      tree.catLeft.push(s.catLeft);
      tree.gain.push(s.gain);
      const newLeafIndex = leaves.length;
      tree.left.push(~best);
      tree.right.push(~newLeafIndex);
      if (leaf.parentNode >= 0) {
        if (leaf.isLeft) tree.left[leaf.parentNode] = nodeId;
        else tree.right[leaf.parentNode] = nodeId;
      }
      const leftLeaf: LeafState = {
        start: leaf.start, end: leaf.start + nLeft, g: s.lg, h: s.lh, c: nLeft, depth: leaf.depth + 1, hist: null, exact: false, zeroEmpty: false, split: null, parentNode: nodeId, isLeft: true,
      };
      const rightLeaf: LeafState = {
        start: leaf.start + nLeft, end: leaf.end, g: leaf.g - s.lg, h: leaf.h - s.lh, c: leaf.c - nLeft, depth: leaf.depth + 1, hist: null, exact: false, zeroEmpty: false, split: null, parentNode: nodeId, isLeft: false,
      };
      const parentHist = leaf.hist;
      // the split that fills the tree makes leaves that are never split: no histograms or searches
      const full = leaves.length + 1 >= p.maxLeaves;
      const canL = !full && this.canSplit(leftLeaf);
      const canR = !full && this.canSplit(rightLeaf);
      const smaller = leftLeaf.c <= rightLeaf.c ? leftLeaf : rightLeaf;
      const larger = smaller === leftLeaf ? rightLeaf : leftLeaf;
      if ((canL || canR) && larger.c <= this.rowSplitMax) {
        // both children are small: their splits are searched from their rows, without histograms
        if (parentHist) this.pool.push(parentHist);
        if (canL) leftLeaf.split = this.findBestSplit(leftLeaf, active, nActive);
        if (canR) rightLeaf.split = this.findBestSplit(rightLeaf, active, nActive);
      } else if ((canL || canR) && parentHist) {
        const sh = this.takeHist();
        this.buildHist(sh, smaller.start, smaller.end, grad, hess, active, nActive);
        smaller.hist = sh;
        smaller.exact = true;
        smaller.zeroEmpty = true;
        if (this.canSplit(larger)) {
          this.subtractChild(parentHist, sh, smaller.start, smaller.end, active, nActive, smaller);
          larger.hist = parentHist;
          // an empty bin of the larger child had all its parent's rows in the smaller one: x - x = +0
          // when the parent's sums were added in the same row order as the smaller child's
          larger.zeroEmpty = leaf.exact;
        } else this.pool.push(parentHist);
        // the smaller child first, while the bitmaps of its bins (subtractChild's) are at hand; each
        // search depends on its own leaf only
        if (smaller === rightLeaf && canR) rightLeaf.split = this.findBestSplit(rightLeaf, active, nActive);
        if (canL) leftLeaf.split = this.findBestSplit(leftLeaf, active, nActive);
        if (smaller !== rightLeaf && canR) rightLeaf.split = this.findBestSplit(rightLeaf, active, nActive);
        if (!canL) this.release(leftLeaf);
        if (!canR) this.release(rightLeaf);
      } else if (parentHist) {
        this.pool.push(parentHist);
      }
      leaves[best] = leftLeaf;
      leaves.push(rightLeaf);
    }
    this.setLeafRanges(leaves);
    for (const l of leaves) {
      tree.leafValue.push(-l.g / (l.h + p.lambdaL2));
      tree.leafCount.push(l.c);
      this.release(l);
    }
    return tree;
  }

  /** Copies the root's rows into the index buffer; returns their gradient and hessian sums. */
  private loadRoot(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number): [number, number] {
    const idx = this.idx;
    let g0 = 0;
    let h0 = 0;
    for (let k = 0; k < m; k++) {
      const i = rows[k];
      idx[k] = i;
      g0 += grad[i];
      h0 += hess[i];
    }
    return [g0, h0];
  }

  /**
   * Grows one symmetric (oblivious) tree on the rows `rows[0..m)` (see GrowerParams.symmetric).
   * Nodes are numbered level by level (level d holds nodes 2^d - 1 .. 2^(d+1) - 2); leaf j is the
   * path whose bits, from the root, are 0 for left and 1 for right.
   */
  growSymmetric(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number, featureMask: Uint8Array): BuiltTree {
    return this.growLevels(grad, hess, rows, m, featureMask, 'exact');
  }

  /**
   * The same tree as growSymmetric, found faster (engine 4): the per-feature gain buffers are reused,
   * the level's gains are summed in the same order, and the missing-left gains are computed only for
   * nodes holding missing values of the feature (elsewhere they equal the missing-right ones, so the
   * chosen split is the same). A unit test checks the trees equal growSymmetric's.
   */
  growSymmetricFast(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number, featureMask: Uint8Array, rootCounts: RootCounts = 'none', givenRoot = -1): BuiltTree {
    return this.growLevels(grad, hess, rows, m, featureMask, 'fast', rootCounts, givenRoot);
  }

  /** A symmetric tree, level by level, with the split search of growSymmetric or growSymmetricFast. */
  private growLevels(grad: Float64Array, hess: Float64Array, rows: Uint32Array, m: number, featureMask: Uint8Array, search: 'exact' | 'fast', rootCounts: RootCounts = 'none', givenRoot = -1): BuiltTree {
    const p = this.params;
    const idx = this.idx;
    const { active, nActive } = this.setActive(featureMask);
    const depthMax = symmetricDepth(p);
    const lambda = p.lambdaL2;
    const [g0, h0] = this.loadRoot(grad, hess, rows, m);
    const given = depthMax > 0 && givenRoot >= 0;
    let segs: SymmetricSegment[] = [{ start: 0, end: m, g: g0, h: h0, c: m, hist: given ? this.takeGivenRoot(givenRoot) : depthMax > 0 ? this.takeHist() : null }];
    if (segs[0].hist && !given) this.buildRoot(segs[0].hist, m, grad, hess, active, nActive, rootCounts);
    // categorical features: one order of the bins per tree, by the root's smoothed G/H ratio
    const catRank = new Map<number, Int32Array>();
    if (depthMax > 0) {
      const root = segs[0].hist as Float64Array;
      for (let a = 0; a < nActive; a++) {
        const f = active[a];
        if (!this.info.isCategorical[f]) continue;
        const nb = this.info.numBins[f];
        const off = this.offsets[f] * 3;
        // the bins by (ratio, bin), a strict total order, so an insertion sort gives the order the
        // array sort with that comparator gave, without its per-tree arrays and closures
        const ratio = this.rankRatio;
        const order = new Int32Array(nb + 1);
        for (let b = 0; b <= nb; b++) {
          const r = root[off + b * 3 + 2] > 0 ? root[off + b * 3] / (root[off + b * 3 + 1] + p.catSmooth) : 0;
          ratio[b] = r;
          let u = b - 1;
          while (u >= 0 && ratio[order[u]] > r) {
            order[u + 1] = order[u];
            u--;
          }
          order[u + 1] = b;
        }
        catRank.set(f, order);
      }
    }
    const levels: LevelSplit[] = [];
    for (let d = 0; d < depthMax; d++) {
      const split = search === 'fast' ? this.levelSplitFast(segs, d, catRank, active, nActive) : this.levelSplitExact(segs, catRank, active, nActive);
      if (split === null) break;
      levels.push(split);
      const isCat = split.catLeft !== null;
      const table = isCat ? (split.catLeft as Uint8Array) : numericTable(this.goLeft, split.bin, this.info.numBins[split.feature], split.defaultLeft);
      const last = d === depthMax - 1;
      const next: SymmetricSegment[] = [];
      const nNext = 2 * segs.length;
      if (!last) {
        if (this.symGiven.length < nNext) this.symGiven = new Uint8Array(nNext);
        this.symGiven.fill(0, 0, nNext);
        if (this.symBits.length < nNext * nActive * 8) this.symBits = new Int32Array(nNext * nActive * 8);
      }
      for (let si = 0; si < segs.length; si++) {
        const s = segs[si];
        const nLeft = partitionByTable(idx, this.tmp, this.cols, split.feature * this.n, s.start, s.end, table);
        let lg = 0;
        let lh = 0;
        for (let k = s.start; k < s.start + nLeft; k++) {
          lg += grad[idx[k]];
          lh += hess[idx[k]];
        }
        const left: SymmetricSegment = { start: s.start, end: s.start + nLeft, g: lg, h: lh, c: nLeft, hist: null };
        const right: SymmetricSegment = { start: s.start + nLeft, end: s.end, g: s.g - lg, h: s.h - lh, c: s.c - nLeft, hist: null };
        if (!last && s.hist) {
          const smaller = left.c <= right.c ? left : right;
          const larger = smaller === left ? right : left;
          const sh = this.takeHist();
          this.buildHist(sh, smaller.start, smaller.end, grad, hess, active, nActive);
          this.subtractChild(s.hist, sh, smaller.start, smaller.end, active, nActive, smaller);
          if (this.bitsOwner === smaller) {
            // the smaller child's bitmaps, for levelSplitFast's next level (segment 2 si or 2 si + 1)
            const sj = 2 * si + (smaller === left ? 0 : 1);
            this.symBits.set(this.leafBits.subarray(0, nActive * 8), sj * nActive * 8);
            this.symGiven[sj] = 1;
          }
          smaller.hist = sh;
          larger.hist = s.hist;
        } else if (s.hist) this.pool.push(s.hist);
        s.hist = null;
        next.push(left, right);
      }
      segs = next;
    }
    for (const s of segs) if (s.hist) this.pool.push(s.hist);
    const tree: BuiltTree = {
      feature: [], thresholdBin: [], defaultLeft: [], isCategorical: [], catLeft: [], left: [], right: [], gain: [], leafValue: [], leafCount: [],
    };
    const D = levels.length;
    for (let d = 0; d < D; d++) {
      const L = levels[d];
      const width = 1 << d;
      for (let j = 0; j < width; j++) {
        tree.feature.push(L.feature);
        tree.thresholdBin.push(L.catLeft ? -1 : L.bin);
        tree.defaultLeft.push(L.defaultLeft);
        tree.isCategorical.push(L.catLeft !== null);
        tree.catLeft.push(L.catLeft);
        tree.gain.push(L.gain / width);
        if (d + 1 < D) {
          tree.left.push((1 << (d + 1)) - 1 + 2 * j);
          tree.right.push((1 << (d + 1)) - 1 + 2 * j + 1);
        } else {
          tree.left.push(~(2 * j));
          tree.right.push(~(2 * j + 1));
        }
      }
    }
    this.setLeafRanges(segs);
    segs.forEach((s) => {
      tree.leafValue.push(s.h + lambda > 0 ? -s.g / (s.h + lambda) : 0);
      tree.leafCount.push(s.c);
    });
    return tree;
  }

  /** growSymmetric's search of a level's split: every node's gain at every cut of every feature. */
  private levelSplitExact(segs: SymmetricSegment[], catRank: Map<number, Int32Array>, active: Int32Array, nActive: number): LevelSplit | null {
    const p = this.params;
    const lambda = p.lambdaL2;
    const score = (g: number, h: number): number => (h + lambda > 0 ? (g * g) / (h + lambda) : 0);
    let bestGain = p.minGainToSplit > 0 ? p.minGainToSplit : 1e-12;
    let best: { feature: number; bin: number; defaultLeft: boolean; catLeft: Uint8Array | null } | null = null;
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      const nb = this.info.numBins[f];
      const off = this.offsets[f] * 3;
      const rank = catRank.get(f);
      // candidates: t = 0..nb-1 cut after position t of the bin order; two missing directions for numeric
      const nCand = nb;
      const gainR = new Float64Array(nCand);
      const gainL = new Float64Array(nCand);
      // each node's gain is a step function of the cut t that changes only at its non-empty bins:
      // add its changes there (difference arrays) and sum them up over t once per feature
      for (const s of segs) {
        const hist = s.hist as Float64Array;
        const parent = score(s.g, s.h);
        let gl = 0;
        let hl = 0;
        let prevR = 0;
        // numeric features also try the missing values on the left (categorical ones have no missing bin)
        const gm = rank ? 0 : hist[off + nb * 3];
        const hm = rank ? 0 : hist[off + nb * 3 + 1];
        // missing left with nothing else left: the base value of the missing-left gains
        let prevL = !rank && hist[off + nb * 3 + 2] > 0 ? score(gm, hm) + score(s.g - gm, s.h - hm) - parent : 0;
        if (!rank) gainL[0] += prevL;
        for (let t = 0; t < nCand; t++) {
          // categorical: the first t+1 categories by rank left; numeric: t < nb-1, value bins <= t
          // left; t = nb-1, every value left (only the missing ones right)
          const j = off + (rank ? rank[t] : t) * 3;
          if (hist[j + 2] === 0) continue;
          gl += hist[j];
          hl += hist[j + 1];
          const gr = score(gl, hl) + score(s.g - gl, s.h - hl) - parent;
          gainR[t] += gr - prevR;
          prevR = gr;
          if (rank) continue;
          const gL = score(gl + gm, hl + hm) + score(s.g - gl - gm, s.h - hl - hm) - parent;
          gainL[t] += gL - prevL;
          prevL = gL;
        }
      }
      for (let t = 1; t < nCand; t++) {
        gainR[t] += gainR[t - 1];
        gainL[t] += gainL[t - 1];
      }
      for (let t = 0; t < nCand; t++) {
        if (gainR[t] > bestGain) {
          bestGain = gainR[t];
          best = { feature: f, bin: t, defaultLeft: false, catLeft: null };
          if (rank) {
            const catLeft = new Uint8Array(nb + 1);
            for (let u = 0; u <= t; u++) catLeft[rank[u]] = 1;
            best.catLeft = catLeft;
            best.defaultLeft = catLeft[nb] === 1;
          }
        }
        if (!rank && t < nb - 1 && gainL[t] > bestGain) {
          bestGain = gainL[t];
          best = { feature: f, bin: t, defaultLeft: true, catLeft: null };
        }
      }
    }
    return best === null ? null : { ...best, gain: bestGain };
  }

  /** growSymmetricFast's search of the same split (see growSymmetricFast). */
  private levelSplitFast(segs: SymmetricSegment[], d: number, catRank: Map<number, Int32Array>, active: Int32Array, nActive: number): LevelSplit | null {
    const p = this.params;
    const lambda = p.lambdaL2;
    const score = (g: number, h: number): number => (h + lambda > 0 ? (g * g) / (h + lambda) : 0);
    // per feature: whether the root had missing values (then some node of every level may)
    if (this.symMissing.length < this.F) this.symMissing = new Uint8Array(this.F);
    const missingSeen = this.symMissing;
    if (this.symGainR.length < 257) {
      this.symGainR = new Float64Array(257);
      this.symGainL = new Float64Array(257);
    }
    if (this.symTs.length < 257) this.symTs = new Int32Array(257);
    const ts = this.symTs;
    // Only a node's non-empty candidates add to the gains (the others are skipped), so a node of few
    // rows against the bins lists them from its rows: per active feature a bitmap of the candidate
    // positions its rows fall in, read in increasing order, instead of a scan of every bin.
    const F = this.F;
    const bins = this.bins;
    const idx = this.idx;
    const nSeg = segs.length;
    const meanBins = this.activeSlots / Math.max(1, nActive);
    if (d === 0) this.symPositions(catRank, active, nActive);
    const pos = this.symPos;
    if (this.symSparse.length < nSeg) this.symSparse = new Uint8Array(nSeg);
    if (this.symBits.length < nSeg * nActive * 8) this.symBits = new Int32Array(nSeg * nActive * 8);
    const sparse = this.symSparse;
    const bits = this.symBits;
    const numBins = this.info.numBins;
    for (let si = 0; si < nSeg; si++) {
      const s = segs[si];
      sparse[si] = s.c < meanBins ? 1 : 0;
      if (!sparse[si]) continue;
      const bitBase = si * nActive * 8;
      if (d > 0 && this.symGiven[si] === 1) {
        // the bitmaps of the segment's bins (growLevels, from subtractChild) turned into those of its
        // candidate positions: a numeric feature's position is its bin except the missing bin (none),
        // a categorical feature's its rank (pos), the last rank none
        for (let a = 0; a < nActive; a++) {
          const f = active[a];
          const bb = bitBase + a * 8;
          if (!catRank.has(f)) {
            const nb = numBins[f];
            bits[bb + (nb >> 5)] &= ~(1 << (nb & 31));
            continue;
          }
          const tb = this.symTmpBits;
          for (let w = 0; w < 8; w++) {
            tb[w] = bits[bb + w];
            bits[bb + w] = 0;
          }
          for (let w = 0; w < 8; w++) {
            let x = tb[w];
            while (x !== 0) {
              const low = x & -x;
              x ^= low;
              const t = pos[a * 257 + (w << 5) + 31 - Math.clz32(low)];
              if (t >= 0) bits[bb + (t >> 5)] |= 1 << (t & 31);
            }
          }
        }
        continue;
      }
      bits.fill(0, bitBase, bitBase + nActive * 8);
      for (let k = s.start; k < s.end; k++) {
        const base = idx[k] * F;
        for (let a = 0; a < nActive; a++) {
          const t = pos[a * 257 + bins[base + active[a]]];
          if (t >= 0) bits[bitBase + a * 8 + (t >> 5)] |= 1 << (t & 31);
        }
      }
    }
    let bestGain = p.minGainToSplit > 0 ? p.minGainToSplit : 1e-12;
    let best: { feature: number; bin: number; defaultLeft: boolean; catLeft: Uint8Array | null } | null = null;
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      const nb = this.info.numBins[f];
      const off = this.offsets[f] * 3;
      const rank = catRank.get(f);
      // candidates: t = 0..nb-1 cut after position t of the bin order; two missing directions for numeric
      const nCand = nb;
      const gainR = this.symGainR;
      const gainL = this.symGainL;
      gainR.fill(0, 0, nCand);
      // numeric features with no missing value in the sample: the missing-left gains equal the
      // missing-right ones at every cut (and never win a tie), so they are not computed
      const root = segs[0].hist as Float64Array;
      const anyMissing = !rank && (d === 0 ? root[off + nb * 3 + 2] > 0 : missingSeen[f] === 1);
      if (d === 0) missingSeen[f] = anyMissing ? 1 : 0;
      if (anyMissing) gainL.fill(0, 0, nCand);
      for (let si = 0; si < nSeg; si++) {
        const s = segs[si];
        const hist = s.hist as Float64Array;
        // the node's non-empty candidates, in increasing order
        let nt = 0;
        if (sparse[si]) {
          const bitBase = si * nActive * 8 + a * 8;
          for (let w = 0; w < 8; w++) {
            let x = bits[bitBase + w];
            while (x !== 0) {
              const low = x & -x;
              x ^= low;
              ts[nt++] = (w << 5) + 31 - Math.clz32(low);
            }
          }
        } else if (rank) {
          for (let t = 0; t < nCand; t++) if (hist[off + rank[t] * 3 + 2] !== 0) ts[nt++] = t;
        } else {
          // numeric: without the rank lookup, and branch-free (every t written, kept when non-empty)
          for (let t = 0; t < nCand; t++) {
            ts[nt] = t;
            nt += +(hist[off + t * 3 + 2] !== 0);
          }
        }
        const sg = s.g;
        const shl = s.h + lambda;
        const parent = shl > 0 ? (sg * sg) / shl : 0;
        let gl = 0;
        let hl = 0;
        let prevR = 0;
        const segMissing = anyMissing && hist[off + nb * 3 + 2] > 0;
        const gm = segMissing ? hist[off + nb * 3] : 0;
        const hm = segMissing ? hist[off + nb * 3 + 1] : 0;
        let prevL = 0;
        if (segMissing) {
          prevL = score(gm, hm) + score(sg - gm, s.h - hm) - parent;
          gainL[0] += prevL;
        }
        for (let u = 0; u < nt; u++) {
          const t = ts[u];
          const j = off + (rank ? rank[t] : t) * 3;
          gl += hist[j];
          hl += hist[j + 1];
          const a = hl + lambda;
          const b = s.h - hl + lambda;
          const gr = (a > 0 ? (gl * gl) / a : 0) + (b > 0 ? ((sg - gl) * (sg - gl)) / b : 0) - parent;
          gainR[t] += gr - prevR;
          if (anyMissing) {
            if (segMissing) {
              const gL = score(gl + gm, hl + hm) + score(sg - gl - gm, s.h - hl - hm) - parent;
              gainL[t] += gL - prevL;
              prevL = gL;
            } else gainL[t] += gr - prevR;
          }
          prevR = gr;
        }
      }
      // the gains at each cut are the running sums of the changes (the same additions, in the same
      // order, as summing the buffers up in place first), compared as they are formed
      let sumR = 0;
      let sumL = 0;
      for (let t = 0; t < nCand; t++) {
        sumR = t === 0 ? gainR[0] : gainR[t] + sumR;
        if (anyMissing) sumL = t === 0 ? gainL[0] : gainL[t] + sumL;
        if (sumR > bestGain) {
          bestGain = sumR;
          best = { feature: f, bin: t, defaultLeft: false, catLeft: null };
          if (rank) {
            const catLeft = new Uint8Array(nb + 1);
            for (let u = 0; u <= t; u++) catLeft[rank[u]] = 1;
            best.catLeft = catLeft;
            best.defaultLeft = catLeft[nb] === 1;
          }
        }
        if (anyMissing && t < nb - 1 && sumL > bestGain) {
          bestGain = sumL;
          best = { feature: f, bin: t, defaultLeft: true, catLeft: null };
        }
      }
    }
    return best === null ? null : { ...best, gain: bestGain };
  }

  private release(l: LeafState): void {
    if (l.hist) {
      this.pool.push(l.hist);
      l.hist = null;
    }
  }

  private canSplit(l: LeafState): boolean {
    const p = this.params;
    if (p.maxDepth > 0 && l.depth >= p.maxDepth) return false;
    return l.c >= 2 * p.minDataInLeaf && l.h >= 2 * p.minHessianInLeaf;
  }

  private partition(start: number, end: number, s: SplitInfo): number {
    const table = s.isCategorical ? (s.catLeft as Uint8Array) : numericTable(this.goLeft, s.bin, this.info.numBins[s.feature], s.defaultLeft);
    return partitionByTable(this.idx, this.tmp, this.cols, s.feature * this.n, start, end, table);
  }

  findBestSplit(leaf: LeafState, active: Int32Array, nActive: number): SplitInfo | null {
    let best: SplitInfo | null = null;
    // A leaf of fewer rows than the mean bins per feature whose empty bins hold +0 visits only its
    // non-empty bins (listed from its rows): the scans skip empty bins or add +0 from them, which
    // leaves every sum as it was, so the split found is the same.
    const sparse = leaf.hist !== null && leaf.zeroEmpty && leaf.c * nActive < this.activeSlots;
    if (sparse && this.bitsOwner !== leaf) this.markBins(leaf.start, leaf.end, active, nActive, leaf);
    for (let a = 0; a < nActive; a++) {
      const f = active[a];
      const floor: number = best === null ? -Infinity : best.gain;
      let s: SplitInfo | null;
      if (leaf.hist === null) s = this.bestSplitFromRows(leaf, f, floor);
      else if (this.info.isCategorical[f]) {
        s = sparse
          ? this.bestCategoricalSplit(leaf, f, floor, leaf.hist, this.offsets[f] * 3, this.leafList, this.leafBinList(a, this.info.numBins[f] + 1))
          : this.bestCategoricalSplit(leaf, f, floor);
      } else s = this.bestNumericSplit(leaf, f, floor, sparse ? a : -1);
      if (s && (best === null || s.gain > best.gain)) best = s;
    }
    return best;
  }

  /**
   * findBestSplit's and subtractChild's bitmaps of the bins a node's rows fall in: 8 words (256 bins)
   * per active feature, those of the node `bitsOwner` (a leaf or segment of the tree being grown,
   * whose rows and active features are those marked).
   */
  private leafBits = new Int32Array(0);
  private bitsOwner: object | null = null;
  private readonly leafList = new Int32Array(257);

  private markBins(start: number, end: number, active: Int32Array, nActive: number, owner: object): void {
    if (this.leafBits.length < nActive * 8) this.leafBits = new Int32Array(this.F * 8);
    const bits = this.leafBits;
    bits.fill(0, 0, nActive * 8);
    this.bitsOwner = owner;
    const F = this.F;
    const bins = this.bins;
    const idx = this.idx;
    for (let k = start; k < end; k++) {
      const base = idx[k] * F;
      for (let a = 0; a < nActive; a++) {
        const b = bins[base + active[a]];
        bits[a * 8 + (b >> 5)] |= 1 << (b & 31);
      }
    }
  }

  /** The marked bins below `limit` of active feature a, in increasing order, into leafList; returns their number. */
  private leafBinList(a: number, limit: number): number {
    const bits = this.leafBits;
    const list = this.leafList;
    let n = 0;
    for (let w = 0; w < 8; w++) {
      let x = bits[a * 8 + w];
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const b = (w << 5) + 31 - Math.clz32(low);
        if (b >= limit) return n;
        list[n++] = b;
      }
    }
    return n;
  }

  /**
   * Split search for a small leaf without a histogram: its rows' sums per bin, added in the leaf's row
   * order (as a histogram would add them), in a bin-indexed scratch of which only the bins present
   * are cleared and scanned (listed in increasing order from a bitmap of the bins seen), instead of
   * every bin of the feature. Same sums, in the same order, as sorting the rows stably by bin (what
   * this did before, in time quadratic in the rows). The scans read the listed bins only (and the
   * numeric missing bin, set below), so the scratch's other bins may hold an earlier leaf's sums.
   */
  private bestSplitFromRows(leaf: LeafState, f: number, floor: number): SplitInfo | null {
    const nb = this.info.numBins[f];
    const F = this.F;
    const bins = this.bins;
    const idx = this.idx;
    const grad = this.grad;
    const hess = this.hess;
    const stats = this.rowStats;
    const seen = this.rowSeen;
    seen.fill(0);
    for (let k = leaf.start; k < leaf.end; k++) {
      const i = idx[k];
      const b = bins[i * F + f];
      const j = b * 3;
      const w = b >> 5;
      const bit = 1 << (b & 31);
      if ((seen[w] & bit) === 0) {
        seen[w] |= bit;
        stats[j] = 0;
        stats[j + 1] = 0;
        stats[j + 2] = 0;
      }
      stats[j] += grad[i];
      stats[j + 1] += hess[i];
      stats[j + 2] += 1;
    }
    const isCat = this.info.isCategorical[f] === 1;
    // categorical: every present bin; numeric: the present value bins below nb-1 (the last value bin
    // is not a threshold), the missing bin's triple read at nb
    const limit = isCat ? nb + 1 : nb - 1;
    const list = this.rowList;
    let nList = 0;
    for (let w = 0; w < 8; w++) {
      let x = seen[w];
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const b = (w << 5) + 31 - Math.clz32(low);
        if (b >= limit) break;
        list[nList++] = b;
      }
    }
    if (isCat) return this.bestCategoricalSplit(leaf, f, floor, stats, 0, list, nList);
    if ((seen[nb >> 5] & (1 << (nb & 31))) === 0) {
      stats[nb * 3] = 0;
      stats[nb * 3 + 1] = 0;
      stats[nb * 3 + 2] = 0;
    }
    return this.scanNumeric(leaf, f, floor, stats, 0, nb - 1, nb * 3, null, list, nList);
  }

  /** `listed`: the active feature's index when findBestSplit marked the leaf's bins, else -1 */
  private bestNumericSplit(leaf: LeafState, f: number, floor: number, listed: number): SplitInfo | null {
    const nb = this.info.numBins[f];
    const off = this.offsets[f] * 3;
    // value bins 0..nb-2 are thresholds (nb-1 would send every value left: the last case below)
    if (listed >= 0) return this.scanNumeric(leaf, f, floor, leaf.hist as Float64Array, off, nb - 1, off + nb * 3, null, this.leafList, this.leafBinList(listed, nb - 1));
    return this.scanNumeric(leaf, f, floor, leaf.hist as Float64Array, off, nb - 1, off + nb * 3, null);
  }

  /**
   * The best threshold of a numeric feature from its bin statistics: `nScan` (gradient, hessian, count)
   * triples from `off` in increasing bin order, the missing values' triple at `mOff`; candidate t is
   * bin `ids[t]` (bin t without ids). With `list`, only the triples list[0..nList) (increasing, below
   * nScan) are visited: the others must be empty and hold +0.
   */
  private scanNumeric(leaf: LeafState, f: number, floor: number, hist: Float64Array, off: number, nScan: number, mOff: number, ids: Int32Array | null, list: Int32Array | null = null, nList = 0): SplitInfo | null {
    const p = this.params;
    const lambda = p.lambdaL2;
    const nb = this.info.numBins[f];
    const G = leaf.g;
    const H = leaf.h;
    const C = leaf.c;
    const gm = hist[mOff];
    const hm = hist[mOff + 1];
    const cm = hist[mOff + 2];
    const parentScore = (G * G) / (H + lambda);
    const minData = p.minDataInLeaf;
    const minHess = p.minHessianInLeaf;
    let bestGain = -Infinity;
    let bestBin = -1;
    let bestDefaultLeft = false;
    let blg = 0;
    let blh = 0;
    let blc = 0;
    let gl = 0;
    let hl = 0;
    let cl = 0;
    const nIter = list ? nList : nScan;
    for (let u = 0; u < nIter; u++) {
      const b = list ? list[u] : u;
      const j = off + b * 3;
      const cb = hist[j + 2];
      gl += hist[j];
      hl += hist[j + 1];
      cl += cb;
      if (cb === 0 || cl + cm < minData) continue;
      // the right side only shrinks from here on (with or without the missing rows on the left)
      if (C - cl < minData) break;
      // missing to the right
      {
        const cr = C - cl;
        const hr = H - hl;
        if (cl >= minData && hl >= minHess && hr >= minHess) {
          const gr = G - gl;
          const gain = (gl * gl) / (hl + lambda) + (gr * gr) / (hr + lambda) - parentScore;
          if (gain > bestGain) {
            bestGain = gain;
            bestBin = b;
            // with no missing rows here, unseen missing values follow the larger side
            bestDefaultLeft = cm === 0 ? cl >= cr : false;
            blg = gl;
            blh = hl;
            blc = cl;
          }
        }
      }
      if (cm > 0) {
        const gl2 = gl + gm;
        const hl2 = hl + hm;
        const cl2 = cl + cm;
        const cr = C - cl2;
        const hr = H - hl2;
        if (cl2 >= minData && cr >= minData && hl2 >= minHess && hr >= minHess) {
          const gr = G - gl2;
          const gain = (gl2 * gl2) / (hl2 + lambda) + (gr * gr) / (hr + lambda) - parentScore;
          if (gain > bestGain) {
            bestGain = gain;
            bestBin = b;
            bestDefaultLeft = true;
            blg = gl2;
            blh = hl2;
            blc = cl2;
          }
        }
      }
    }
    if (cm > 0) {
      // non-missing left, missing right
      const lc = C - cm;
      const lh = H - hm;
      const lg = G - gm;
      if (lc >= minData && cm >= minData && lh >= minHess && hm >= minHess) {
        const gain = (lg * lg) / (lh + lambda) + (gm * gm) / (hm + lambda) - parentScore;
        if (gain > bestGain) {
          bestGain = gain;
          bestBin = nb - 1;
          bestDefaultLeft = false;
          blg = lg;
          blh = lh;
          blc = lc;
        }
      }
    }
    if (bestBin < 0 || !(bestGain > floor)) return null;
    const bin = bestBin === nb - 1 || ids === null ? bestBin : ids[bestBin];
    return { gain: bestGain, feature: f, bin, defaultLeft: bestDefaultLeft, isCategorical: false, catLeft: null, lg: blg, lh: blh, lc: blc };
  }

  /**
   * With `list`: only bins list[0..nList) (increasing) can be non-empty (only non-empty bins are read).
   * null also when the best gain is not above `floor` (findBestSplit's best so far, which such a split
   * could not replace), so that its category set is not built, as scanNumeric does.
   */
  private bestCategoricalSplit(leaf: LeafState, f: number, floor: number, hist = leaf.hist as Float64Array, off = this.offsets[f] * 3, list: Int32Array | null = null, nList = 0): SplitInfo | null {
    const p = this.params;
    const lambda = p.lambdaL2 + p.catL2;
    const nb = this.info.numBins[f];
    const G = leaf.g;
    const H = leaf.h;
    const C = leaf.c;
    const parentScore = (G * G) / (H + lambda);
    const order = this.catOrder;
    const ratio = this.catRatio;
    const treeRatio = this.useTreeCatOrder ? this.treeCatRatio : null;
    const treeOff = this.offsets[f];
    let m = 0;
    let nonEmpty = 0;
    const nIter = list ? nList : nb + 1;
    for (let u = 0; u < nIter; u++) {
      const b = list ? list[u] : u;
      const j = off + b * 3;
      const c = hist[j + 2];
      if (c <= 0) continue;
      nonEmpty++;
      if (c >= p.minDataPerGroup || nb <= p.maxCatToOnehot) {
        order[m] = b;
        ratio[b] = treeRatio ? treeRatio[treeOff + b] : hist[j] / (hist[j + 1] + p.catSmooth);
        m++;
      }
    }
    if (nonEmpty < 2 || m === 0) return null;
    let bestGain = -Infinity;
    let blg = 0;
    let blh = 0;
    let blc = 0;
    let bestT = -1;
    let bestDir = 0;
    const minData = p.minDataInLeaf;
    const minHess = p.minHessianInLeaf;
    const onehot = nb <= p.maxCatToOnehot;
    const sorted = order.subarray(0, m);
    if (!onehot) {
      // insertion sort by G/H ratio (ties by bin), m <= 256 and usually small
      for (let a = 1; a < m; a++) {
        const x = sorted[a];
        const rx = ratio[x];
        let b = a - 1;
        while (b >= 0 && (ratio[sorted[b]] > rx || (ratio[sorted[b]] === rx && sorted[b] > x))) {
          sorted[b + 1] = sorted[b];
          b--;
        }
        sorted[b + 1] = x;
      }
    }
    const maxT = onehot ? m : Math.min(p.maxCatThreshold, m - 1 > 0 ? m - 1 : m);
    // one-vs-rest (few categories) or prefixes of the G/H ordering from either end
    for (let dir = 1; dir >= (onehot ? 1 : -1); dir -= 2) {
      let gl = 0;
      let hl = 0;
      let cl = 0;
      for (let t = 0; t < maxT; t++) {
        const b = dir === 1 ? sorted[t] : sorted[m - 1 - t];
        const j = off + b * 3;
        if (onehot) {
          gl = hist[j];
          hl = hist[j + 1];
          cl = hist[j + 2];
        } else {
          gl += hist[j];
          hl += hist[j + 1];
          cl += hist[j + 2];
        }
        const cr = C - cl;
        const hr = H - hl;
        if (cl < minData || cr < minData || hl < minHess || hr < minHess) continue;
        const gr = G - gl;
        const gain = (gl * gl) / (hl + lambda) + (gr * gr) / (hr + lambda) - parentScore;
        if (gain > bestGain) {
          bestGain = gain;
          bestT = t;
          bestDir = dir;
          blg = gl;
          blh = hl;
          blc = cl;
        }
      }
    }
    if (bestT < 0 || !(bestGain > floor)) return null;
    // the left set: one category (one-vs-rest) or a prefix of the order from either end
    const catLeft = new Uint8Array(nb + 1);
    if (onehot) catLeft[sorted[bestT]] = 1;
    else if (bestDir === 1) for (let t = 0; t <= bestT; t++) catLeft[sorted[t]] = 1;
    else for (let t = m - 1 - bestT; t < m; t++) catLeft[sorted[t]] = 1;
    return {
      gain: bestGain, feature: f, bin: -1, defaultLeft: catLeft[nb] === 1, isCategorical: true, catLeft, lg: blg, lh: blh, lc: blc,
    };
  }
}

/** Routes one binned row through a built tree; returns the leaf index. */
export function leafOfBinned(tree: BuiltTree, info: BinnedFeatureInfo, bins: Uint8Array, base: number): number {
  if (tree.feature.length === 0) return 0;
  let node = 0;
  while (node >= 0) {
    const f = tree.feature[node];
    const b = bins[base + f];
    let goLeft: boolean;
    if (tree.isCategorical[node]) goLeft = (tree.catLeft[node] as Uint8Array)[b] === 1;
    else if (b === info.numBins[f]) goLeft = tree.defaultLeft[node];
    else goLeft = b <= tree.thresholdBin[node];
    node = goLeft ? tree.left[node] : tree.right[node];
  }
  return ~node;
}

/**
 * A built tree as flat routing tables, for scoring binned rows many times (out-of-bag and
 * validation rows after every tree). Every split becomes a 256-entry table "does bin b go left", so
 * numeric, missing and categorical splits take the same path; same leaves as `leafOfBinned`.
 */
export interface BinnedRouter {
  feature: Int32Array;
  left: Int32Array;
  right: Int32Array;
  /** node * 256 + bin -> 1 when the bin goes left */
  goesLeft: Uint8Array;
}

/** `reuse` (from routerBuffer) avoids allocating tables for every tree of a training run. */
export function routerOf(tree: BuiltTree, info: BinnedFeatureInfo, reuse: BinnedRouter | null = null): BinnedRouter {
  const nodes = tree.feature.length;
  const fits = reuse !== null && reuse.feature.length >= nodes;
  const r: BinnedRouter = fits
    ? { feature: reuse.feature.subarray(0, nodes), left: reuse.left.subarray(0, nodes), right: reuse.right.subarray(0, nodes), goesLeft: reuse.goesLeft.subarray(0, nodes * 256) }
    : { feature: new Int32Array(nodes), left: new Int32Array(nodes), right: new Int32Array(nodes), goesLeft: new Uint8Array(nodes * 256) };
  const goesLeft = r.goesLeft;
  if (fits) goesLeft.fill(0);
  for (let node = 0; node < nodes; node++) {
    const f = tree.feature[node];
    r.feature[node] = f;
    r.left[node] = tree.left[node];
    r.right[node] = tree.right[node];
    const base = node * 256;
    const missingBin = info.numBins[f];
    if (tree.isCategorical[node]) {
      const member = tree.catLeft[node] as Uint8Array;
      for (let b = 0; b < member.length; b++) goesLeft[base + b] = member[b];
    } else {
      const thr = tree.thresholdBin[node];
      for (let b = 0; b <= thr && b < missingBin; b++) goesLeft[base + b] = 1;
      goesLeft[base + missingBin] = tree.defaultLeft[node] ? 1 : 0;
    }
  }
  return r;
}

/** An empty router with room for trees of up to `maxNodes` splits, for `routerOf(tree, info, reuse)`. */
export function routerBuffer(maxNodes: number): BinnedRouter {
  return { feature: new Int32Array(maxNodes), left: new Int32Array(maxNodes), right: new Int32Array(maxNodes), goesLeft: new Uint8Array(maxNodes * 256) };
}

/**
 * Leaves of many binned rows in one built tree, found by partitioning the rows node by node (with the
 * grower's partitions) instead of walking every row from the root: a walk is a chain of dependent
 * loads and an unpredictable branch per level, a partition streams a node's rows without branches.
 * The leaves are leafOfBinned's (and leafOfRouted's): the partitions send a row left exactly when the
 * routing tables do. The boosting loop scores its out-of-bag and validation rows with this.
 */
export class PartitionRouter {
  private idx: Uint32Array;
  private tmp: Uint32Array;
  private stack = new Int32Array(0);

  constructor(rows: number) {
    this.idx = new Uint32Array(rows);
    this.tmp = new Uint32Array(rows);
  }

  private readonly table = new Uint8Array(256);
  private levelTables = new Uint8Array(0);

  /**
   * route() for a complete symmetric tree (growLevels' numbering: node j of level d has children 2j
   * and 2j + 1 of level d + 1, leaf j of the last level): every row's leaf is its path, one bit per
   * level (1 for right), read level by level from the level's column with no partition at all.
   */
  routeSymmetric(tree: BuiltTree, info: BinnedFeatureInfo, cols: Uint8Array, nRows: number, rows: Uint32Array | null, count: number, leafOut: Int32Array): void {
    const nodes = tree.feature.length;
    const D = Math.round(Math.log2(nodes + 1));
    if (nodes === 0 || (1 << D) - 1 !== nodes) {
      this.route(tree, info, cols, nRows, rows, count, leafOut);
      return;
    }
    if (this.levelTables.length < D * 256) this.levelTables = new Uint8Array(D * 256);
    const tables = this.levelTables;
    for (let k = 0; k < count; k++) leafOut[rows ? rows[k] : k] = 0;
    for (let d = 0; d < D; d++) {
      const node = (1 << d) - 1;
      const f = tree.feature[node];
      const table = tree.isCategorical[node] ? (tree.catLeft[node] as Uint8Array) : numericTable(this.table, tree.thresholdBin[node], info.numBins[f], tree.defaultLeft[node]);
      tables.fill(0, d * 256, d * 256 + 256);
      tables.set(table, d * 256);
      const off = f * nRows;
      const tOff = d * 256;
      if (rows) {
        for (let k = 0; k < count; k++) {
          const i = rows[k];
          leafOut[i] = (leafOut[i] << 1) | (1 - tables[tOff + cols[off + i]]);
        }
      } else {
        for (let i = 0; i < count; i++) leafOut[i] = (leafOut[i] << 1) | (1 - tables[tOff + cols[off + i]]);
      }
    }
  }

  /**
   * leafOut[r] = leaf of row r for the rows r = rows[0..count) (r = 0..count-1 without rows), where
   * `cols` holds the binned rows column-major (binColumns) with `nRows` rows.
   */
  route(tree: BuiltTree, info: BinnedFeatureInfo, cols: Uint8Array, nRows: number, rows: Uint32Array | null, count: number, leafOut: Int32Array): void {
    const idx = this.idx;
    if (rows) idx.set(rows.subarray(0, count));
    else for (let k = 0; k < count; k++) idx[k] = k;
    const nodes = tree.feature.length;
    if (nodes === 0) {
      for (let k = 0; k < count; k++) leafOut[idx[k]] = 0;
      return;
    }
    if (this.stack.length < nodes * 3) this.stack = new Int32Array(nodes * 3);
    const stack = this.stack;
    // (node, start, end) triples; every node is pushed once
    let top = 0;
    stack[top++] = 0;
    stack[top++] = 0;
    stack[top++] = count;
    while (top > 0) {
      const end = stack[--top];
      const start = stack[--top];
      const node = stack[--top];
      const f = tree.feature[node];
      const table = tree.isCategorical[node] ? (tree.catLeft[node] as Uint8Array) : numericTable(this.table, tree.thresholdBin[node], info.numBins[f], tree.defaultLeft[node]);
      const nLeft = partitionByTable(idx, this.tmp, cols, f * nRows, start, end, table);
      const mid = start + nLeft;
      const l = tree.left[node];
      const r = tree.right[node];
      if (l < 0) {
        for (let k = start; k < mid; k++) leafOut[idx[k]] = ~l;
      } else if (mid > start) {
        stack[top++] = l;
        stack[top++] = start;
        stack[top++] = mid;
      }
      if (r < 0) {
        for (let k = mid; k < end; k++) leafOut[idx[k]] = ~r;
      } else if (end > mid) {
        stack[top++] = r;
        stack[top++] = mid;
        stack[top++] = end;
      }
    }
  }
}

/** Routes one binned row through a router; returns the leaf index. */
export function leafOfRouted(r: BinnedRouter, bins: Uint8Array, base: number): number {
  if (r.feature.length === 0) return 0;
  let node = 0;
  while (node >= 0) {
    node = r.goesLeft[(node << 8) + bins[base + r.feature[node]]] === 1 ? r.left[node] : r.right[node];
  }
  return ~node;
}
