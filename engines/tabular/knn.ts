/**
 * The k-nearest-neighbours member (experiments, issue 15's nineteenth round): on small binary data
 * the model's training rows are stored, standardised (numeric features: minus the mean, over the
 * standard deviation, a missing value at the training median; categorical features: their code, a
 * mismatch counting as one unit of squared distance, missing as a code of its own), and a row's
 * member output is the kernel-weighted share of positives among its k nearest stored rows (Euclidean
 * distance; weights 1 - (d / d_{k+1})², kknn's Epanechnikov kernel on the distance scaled by the
 * (k+1)-th neighbour's, plus a small floor so that every neighbour counts). k is chosen from a small
 * grid by leave-one-out ROC AUC on the rows the member may use (the fold's training rows for its
 * out-of-fold outputs, all rows for the model's part): no row's own target enters its own output.
 * No feature statistic reads a target, so computing them on all rows leaks nothing.
 */
import { rocAuc } from './metrics';
import { Prng } from './prng';

export interface KnnOptions {
  /** the member is fitted on binary data of at most this many rows (the artefact holds them) */
  maxRows: number;
  /** the grid of k, chosen by leave-one-out ROC AUC */
  ks: number[];
  /** neighbours kept per row when scoring out of fold (enough for the largest k after a fold's rows are skipped) */
  listSize: number;
  /** the kernel's floor: a neighbour's weight is at least this */
  floor: number;
  /** weight of categorical mismatches in squared distance */
  catWeight: number;
  /** the member is kept only when the mixture raises the out-of-fold ROC AUC by at least this (default 0) */
  minGain?: number;
  /**
   * Experiments (twenty-first round): the member is kept only when the mixture's out-of-fold ROC AUC
   * gain over the model's outputs alone is significant: in `bootstrap.draws` resamples of the held-out
   * rows (with replacement, a fixed seed; the mixture's weight as fitted), the share of resamples where
   * it gains nothing (gain <= 0) is at most `bootstrap.alpha`. Absent: no such test.
   */
  bootstrap?: { draws: number; alpha: number };
  /**
   * Experiments (twenty-first round): the member is kept only when its cross-validated gain is at
   * least this: each of the trees' folds mixed at the weight fitted (mixWeight's ROC AUC rule) on the
   * other folds' rows alone, and the pooled out-of-fold ROC AUC of that mixture compared with the
   * model's own. Absent: no such test.
   */
  cvGain?: number;
  /**
   * Relevance-weighed distance (experiments, twentieth round): powers p of a metric where each
   * feature's squared distance weighs r^p / max r^p, r its univariate relevance (|2 AUC - 1|) on the
   * rows the member may use; with several, the metric is chosen with k by leave-one-out ROC AUC on
   * those rows (p = 0: every feature weighs the same). Absent: 17.0.0's metric, its lists shared by the folds.
   */
  relevance?: number | number[];
}

export const DEFAULT_KNN_OPTIONS: KnnOptions = { maxRows: 2000, ks: [5, 10, 20, 40], listSize: 128, floor: 0.01, catWeight: 1 };

/** The model's kNN part: the stored standardised rows and their labels, k and the member's weight. */
export interface KnnPart {
  n: number;
  nFeatures: number;
  /** per feature: 1 when categorical (distance by mismatch), 0 when numeric */
  categorical: Uint8Array;
  /** numeric features: the mean subtracted (categorical: 0) */
  centre: Float64Array;
  /** numeric features: 1 / standard deviation (0 for a constant column; categorical: catWeight's root) */
  scale: Float64Array;
  /** numeric features: the standardised value of a missing value (the training median's); categorical: -1 */
  fill: Float64Array;
  /** n x F standardised rows (categorical features: their code, -1 for missing) */
  Z: Float64Array;
  /** labels 0/1 */
  y: Float64Array;
  k: number;
  floor: number;
  /** the member's weight in the mixture with the model's probabilities */
  weight: number;
}

export interface KnnSpace {
  categorical: Uint8Array;
  centre: Float64Array;
  scale: Float64Array;
  fill: Float64Array;
}

/** Standardisation of the features (no target read). */
export function fitSpace(X: Float64Array, n: number, F: number, categorical: Int32Array, catWeight: number): KnnSpace {
  const cat = new Uint8Array(F);
  const centre = new Float64Array(F);
  const scale = new Float64Array(F);
  const fill = new Float64Array(F);
  const col: number[] = [];
  for (let f = 0; f < F; f++) {
    if (categorical[f] > 0) {
      cat[f] = 1;
      scale[f] = Math.sqrt(catWeight);
      fill[f] = -1;
      continue;
    }
    col.length = 0;
    for (let i = 0; i < n; i++) {
      const v = X[i * F + f];
      if (!Number.isNaN(v)) col.push(v);
    }
    if (col.length === 0) continue; // scale 0: ignored
    col.sort((a, b) => a - b);
    const median = col.length % 2 ? col[(col.length - 1) / 2] : (col[col.length / 2 - 1] + col[col.length / 2]) / 2;
    let mean = 0;
    for (const v of col) mean += v;
    mean /= col.length;
    let ss = 0;
    for (const v of col) ss += (v - mean) * (v - mean);
    const sd = Math.sqrt(ss / col.length);
    centre[f] = mean;
    scale[f] = sd > 1e-12 ? 1 / sd : 0;
    fill[f] = (median - mean) * scale[f];
  }
  return { categorical: cat, centre, scale, fill };
}

/** Rows in the member's space (n x F). */
export function toSpace(space: KnnSpace, X: Float64Array, n: number, F: number): Float64Array {
  const Z = new Float64Array(n * F);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < F; f++) {
      const v = X[i * F + f];
      if (space.categorical[f]) Z[i * F + f] = Number.isNaN(v) ? -1 : v;
      else Z[i * F + f] = Number.isNaN(v) ? space.fill[f] : (v - space.centre[f]) * space.scale[f];
    }
  }
  return Z;
}

/**
 * The squared distance of row a of A to row b of B: numeric features' squared differences, a
 * categorical mismatch adding its weight, summed in feature order. neighbourLists and predictKnn
 * inline this sum, in this order, so their distances are this function's to the last bit.
 */
export function distance(space: KnnSpace, A: Float64Array, a: number, B: Float64Array, b: number, F: number): number {
  let s = 0;
  const oa = a * F;
  const ob = b * F;
  for (let f = 0; f < F; f++) {
    if (space.categorical[f]) {
      if (A[oa + f] !== B[ob + f]) s += space.scale[f] * space.scale[f];
    } else {
      const d = A[oa + f] - B[ob + f];
      s += d * d;
    }
  }
  return s; // squared
}

/**
 * Inserts (d, j) into the sorted buffers of length `len` (capacity cap), ties after earlier entries;
 * returns the new length.
 */
function insert(dist: Float64Array, idx: Int32Array, len: number, cap: number, d: number, j: number): number {
  if (len === cap && !(d < dist[len - 1])) return len;
  const end = len === cap ? len - 1 : len;
  // the first entry farther than d (binary search), then the rest moved up one
  let lo = 0;
  let hi = end;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (dist[mid] > d) hi = mid;
    else lo = mid + 1;
  }
  if (end - lo > 8) {
    dist.copyWithin(lo + 1, lo, end);
    idx.copyWithin(lo + 1, lo, end);
  } else {
    for (let t = end; t > lo; t--) {
      dist[t] = dist[t - 1];
      idx[t] = idx[t - 1];
    }
  }
  dist[lo] = d;
  idx[lo] = j;
  return len === cap ? len : len + 1;
}

/** Kernel-weighted share of positives among the first k of `m` sorted neighbours (squared distances), the prior if none. */
function vote(d2: ArrayLike<number>, nb: ArrayLike<number>, m: number, k: number, y: Float64Array, floor: number, prior: number): number {
  const used = Math.min(k, m);
  if (used === 0) return prior;
  const ref = Math.sqrt(d2[Math.min(k, m - 1)]);
  let sw = 0;
  let sy = 0;
  for (let t = 0; t < used; t++) {
    const r = ref > 0 ? Math.sqrt(d2[t]) / ref : 0;
    const w = Math.max(0, 1 - r * r) + floor;
    sw += w;
    sy += w * y[nb[t]];
  }
  return sy / sw;
}

export interface NeighbourLists {
  /** n x L neighbour indices, nearest first (self excluded) */
  idx: Int32Array;
  /** their squared distances */
  dist: Float64Array;
  L: number;
}

/**
 * Each row's L nearest other rows. A pair's distance is computed once, for its earlier row, and kept
 * (the upper triangle, n(n-1)/2 doubles: 16 MB at 2,000 rows) for the later one: (a - b)² and
 * (b - a)² are the same double, and each row still meets the others in index order, so the lists are
 * those of computing every pair from both ends.
 */
export function neighbourLists(space: KnnSpace, Z: Float64Array, n: number, F: number, listSize: number): NeighbourLists {
  const L = Math.min(listSize, n - 1);
  const idx = new Int32Array(n * L);
  const dist = new Float64Array(n * L);
  const bd = new Float64Array(L);
  const bi = new Int32Array(L);
  const upper = new Float64Array((n * (n - 1)) / 2);
  // row r's pairs (r, j > r) start at upper[start(r)]
  const start = (r: number): number => r * n - (r * (r + 1)) / 2 - r - 1;
  const cat = space.categorical;
  // a categorical mismatch's squared distance (the product distance() adds)
  const mismatch = Float64Array.from(space.scale, (v) => v * v);
  let allNumeric = true;
  for (let f = 0; f < F; f++) if (cat[f]) allNumeric = false;
  for (let i = 0; i < n; i++) {
    let len = 0;
    for (let j = 0; j < i; j++) {
      const s = upper[start(j) + i];
      // insert()'s own test, first: most rows are farther than the list's last
      if (len < L || s < bd[L - 1]) len = insert(bd, bi, len, L, s, j);
    }
    const row = start(i);
    const oi = i * F;
    for (let j = i + 1; j < n; j++) {
      // distance(), inlined: the same sum in the same order
      let s: number;
      if (allNumeric) {
        s = 0;
        const oj = j * F;
        for (let f = 0; f < F; f++) {
          const d = Z[oi + f] - Z[oj + f];
          s += d * d;
        }
      } else {
        s = 0;
        const oj = j * F;
        for (let f = 0; f < F; f++) {
          if (cat[f]) {
            if (Z[oi + f] !== Z[oj + f]) s += mismatch[f];
          } else {
            const d = Z[oi + f] - Z[oj + f];
            s += d * d;
          }
        }
      }
      upper[row + j] = s;
      if (len < L || s < bd[L - 1]) len = insert(bd, bi, len, L, s, j);
    }
    idx.set(bi.subarray(0, L), i * L);
    dist.set(bd.subarray(0, L), i * L);
  }
  return { idx, dist, L };
}

/**
 * A row's output from its list, skipping rows where `skip` is 1, for each k of the grid
 * (out[g]). Uses at most max(ks) + 1 usable neighbours.
 */
function rowOutputs(lists: NeighbourLists, i: number, skip: Uint8Array, y: Float64Array, ks: number[], floor: number, prior: number, bufD: Float64Array, bufI: Int32Array, out: Float64Array): void {
  const need = bufD.length;
  let m = 0;
  for (let t = 0; t < lists.L && m < need; t++) {
    const j = lists.idx[i * lists.L + t];
    if (skip[j]) continue;
    bufD[m] = lists.dist[i * lists.L + t];
    bufI[m] = j;
    m++;
  }
  for (let g = 0; g < ks.length; g++) out[g] = vote(bufD, bufI, m, ks[g], y, floor, prior);
}

/** The k of the grid with the greatest leave-one-out ROC AUC on the rows not skipped (the smaller k on ties). */
export function chooseK(lists: NeighbourLists, n: number, skip: Uint8Array, y: Float64Array, opts: KnnOptions): number {
  return chooseKAuc(lists, n, skip, y, opts).k;
}

/** chooseK, with the chosen k's leave-one-out ROC AUC. */
export function chooseKAuc(lists: NeighbourLists, n: number, skip: Uint8Array, y: Float64Array, opts: KnnOptions): { k: number; auc: number } {
  const ks = opts.ks;
  const maxK = Math.max(...ks);
  const bufD = new Float64Array(maxK + 1);
  const bufI = new Int32Array(maxK + 1);
  const o = new Float64Array(ks.length);
  const rows: number[] = [];
  for (let i = 0; i < n; i++) if (!skip[i]) rows.push(i);
  let prior = 0;
  for (const i of rows) prior += y[i];
  prior /= Math.max(1, rows.length);
  const scores = ks.map(() => new Float64Array(rows.length));
  const yRows = Float64Array.from(rows, (i) => y[i]);
  rows.forEach((i, r) => {
    rowOutputs(lists, i, skip, y, ks, opts.floor, prior, bufD, bufI, o);
    for (let g = 0; g < ks.length; g++) scores[g][r] = o[g];
  });
  let best = ks[0];
  let bestAuc = -Infinity;
  ks.forEach((k, g) => {
    const auc = rocAuc(yRows, scores[g]);
    if (auc > bestAuc) {
      bestAuc = auc;
      best = k;
    }
  });
  return { k: best, auc: bestAuc };
}

/**
 * A feature's univariate relevance on the given rows (the rows the member may use, so no held-out
 * target is read): |2 AUC - 1| of the standardised value (a missing value at its fill) for a numeric
 * feature; for a categorical one, 2 AUC - 1 of its category's share of positives among those rows
 * (smoothed by one prior row). Not a leave-one-out share: that ranks every row of a category below
 * the category's other rows of the other class, which counts every pair within a category as wrong
 * and took a few-category column's AUC under 0.5 (relevance 0) in this round's first runs.
 */
export function featureRelevance(space: KnnSpace, Z: Float64Array, F: number, rows: ArrayLike<number>, y: Float64Array): Float64Array {
  const m = rows.length;
  const r = new Float64Array(F);
  const yr = Float64Array.from({ length: m }, (_, t) => y[rows[t]]);
  let prior = 0;
  for (let t = 0; t < m; t++) prior += yr[t];
  prior /= Math.max(1, m);
  const score = new Float64Array(m);
  for (let f = 0; f < F; f++) {
    if (space.categorical[f]) {
      const pos = new Map<number, number>();
      const cnt = new Map<number, number>();
      for (let t = 0; t < m; t++) {
        const c = Z[rows[t] * F + f];
        pos.set(c, (pos.get(c) ?? 0) + yr[t]);
        cnt.set(c, (cnt.get(c) ?? 0) + 1);
      }
      for (let t = 0; t < m; t++) {
        const c = Z[rows[t] * F + f];
        score[t] = ((pos.get(c) as number) + prior) / ((cnt.get(c) as number) + 1);
      }
      const auc = rocAuc(yr, score);
      r[f] = Number.isNaN(auc) ? 0 : Math.max(0, 2 * auc - 1);
    } else {
      if (space.scale[f] === 0) continue;
      for (let t = 0; t < m; t++) score[t] = Z[rows[t] * F + f];
      const auc = rocAuc(yr, score);
      r[f] = Number.isNaN(auc) ? 0 : Math.abs(2 * auc - 1);
    }
  }
  return r;
}

/**
 * The space with each feature's squared distance weighed by r^power / max r^power (the scale times
 * the weight's root; a numeric fill moves with it). All relevances 0: the space as it is.
 */
export function weighSpace(space: KnnSpace, relevance: Float64Array, power: number): KnnSpace {
  const F = relevance.length;
  let top = 0;
  for (let f = 0; f < F; f++) top = Math.max(top, Math.pow(relevance[f], power));
  if (!(top > 0)) return space;
  const scale = new Float64Array(F);
  const fill = new Float64Array(F);
  for (let f = 0; f < F; f++) {
    const root = Math.sqrt(Math.pow(relevance[f], power) / top);
    scale[f] = space.scale[f] * root;
    fill[f] = space.categorical[f] ? space.fill[f] : space.fill[f] * root;
  }
  return { categorical: space.categorical, centre: space.centre, scale, fill };
}

/**
 * Each row's L nearest rows among `pool` (ascending indices; the row itself excluded), L at most
 * listSize: with the pool holding only rows the member may use, no list entry is ever skipped.
 */
export function neighbourListsAmong(space: KnnSpace, Z: Float64Array, n: number, F: number, listSize: number, pool: Int32Array): NeighbourLists {
  const L = Math.max(0, Math.min(listSize, pool.length - 1));
  const idx = new Int32Array(n * L);
  const dist = new Float64Array(n * L).fill(Infinity);
  if (L === 0) return { idx, dist, L };
  const bd = new Float64Array(L);
  const bi = new Int32Array(L);
  for (let i = 0; i < n; i++) {
    let len = 0;
    for (let t = 0; t < pool.length; t++) {
      const j = pool[t];
      if (j === i) continue;
      len = insert(bd, bi, len, L, distance(space, Z, i, Z, j, F), j);
    }
    // len === L: a pooled row has pool.length - 1 >= L candidates, any other row one more
    idx.set(bi, i * L);
    dist.set(bd, i * L);
  }
  return { idx, dist, L };
}

export interface KnnFit {
  space: KnnSpace;
  Z: Float64Array;
  lists: NeighbourLists;
  /** n x 2 out-of-fold probabilities (NaN where a row was not held out) */
  oofOut: Float64Array;
  /** k chosen per fold */
  foldKs: number[];
  /** the relevance power chosen per fold (relevance) */
  foldPowers?: number[];
  /** the encoded rows, kept when the model's part is placed in a weighed space of its own (relevance) */
  X?: Float64Array;
}

/**
 * The member's out-of-fold outputs on the given folds (each fold's held-out rows scored from the
 * other rows, k chosen by leave-one-out on those other rows). A row held out more than once gets the
 * mean of its outputs.
 */
export function fitKnnOof(X: Float64Array, n: number, F: number, categorical: Int32Array, y: Float64Array, folds: Int32Array[], opts: KnnOptions): KnnFit {
  const space = fitSpace(X, n, F, categorical, opts.catWeight);
  const Z = toSpace(space, X, n, F);
  if (relevancePowers(opts).length > 0) return fitWeighedOof(space, X, Z, n, F, y, folds, opts);
  const lists = neighbourLists(space, Z, n, F, opts.listSize);
  const { oofOut, foldKs } = foldOutputs(n, y, folds, opts, (skip) => ({ lists, k: chooseK(lists, n, skip, y, opts) }));
  return { space, Z, lists, oofOut, foldKs };
}

/**
 * Out-of-fold outputs over the folds: each fold's held-out rows scored from the lists and k that
 * `metricOf` gives for the rows the member may use (`skip` marks the held-out ones), against those
 * rows' share of positives; a row held out more than once gets the mean of its outputs.
 */
function foldOutputs(
  n: number,
  y: Float64Array,
  folds: Int32Array[],
  opts: KnnOptions,
  metricOf: (skip: Uint8Array) => { lists: NeighbourLists; k: number; power?: number },
): { oofOut: Float64Array; foldKs: number[]; foldPowers: number[] } {
  const oofOut = new Float64Array(n * 2).fill(NaN);
  const times = new Int32Array(n);
  const skip = new Uint8Array(n);
  const maxK = Math.max(...opts.ks);
  const bufD = new Float64Array(maxK + 1);
  const bufI = new Int32Array(maxK + 1);
  const o = new Float64Array(1);
  const foldKs: number[] = [];
  const foldPowers: number[] = [];
  for (const valid of folds) {
    skip.fill(0);
    for (const r of valid) skip[r] = 1;
    const { lists, k, power } = metricOf(skip);
    foldKs.push(k);
    if (power !== undefined) foldPowers.push(power);
    let prior = 0;
    let cnt = 0;
    for (let i = 0; i < n; i++) if (!skip[i]) { prior += y[i]; cnt++; }
    prior /= Math.max(1, cnt);
    for (const r of valid) {
      rowOutputs(lists, r, skip, y, [k], opts.floor, prior, bufD, bufI, o);
      if (times[r] === 0) oofOut[r * 2 + 1] = o[0];
      else oofOut[r * 2 + 1] += o[0];
      times[r]++;
    }
  }
  for (let r = 0; r < n; r++) {
    if (times[r] === 0) continue;
    oofOut[r * 2 + 1] /= times[r];
    oofOut[r * 2] = 1 - oofOut[r * 2 + 1];
  }
  return { oofOut, foldKs, foldPowers };
}

/** KnnOptions.relevance as a list of powers (empty: 17.0.0's metric). */
export function relevancePowers(opts: KnnOptions): number[] {
  const r = opts.relevance;
  return r === undefined ? [] : typeof r === 'number' ? [r] : r;
}

/**
 * The relevance power (and k) with the greatest leave-one-out ROC AUC on the pooled rows (the earlier
 * power on ties), the weights read from the pooled rows alone; each row's neighbours among them.
 */
function chooseMetric(space: KnnSpace, X: Float64Array, Z: Float64Array, n: number, F: number, y: Float64Array, pool: Int32Array, skip: Uint8Array, opts: KnnOptions): { space: KnnSpace; W: Float64Array; lists: NeighbourLists; k: number; power: number } {
  const relevance = featureRelevance(space, Z, F, pool, y);
  const maxK = Math.max(...opts.ks);
  let best: { space: KnnSpace; W: Float64Array; lists: NeighbourLists; k: number; power: number; auc: number } | undefined;
  for (const power of relevancePowers(opts)) {
    const weighed = weighSpace(space, relevance, power);
    const W = toSpace(weighed, X, n, F);
    const lists = neighbourListsAmong(weighed, W, n, F, maxK + 1, pool);
    const { k, auc } = chooseKAuc(lists, n, skip, y, opts);
    if (!best || auc > best.auc) best = { space: weighed, W, lists, k, power, auc };
  }
  if (!best) throw new Error('no relevance power');
  return best;
}

/**
 * fitKnnOof with a relevance-weighed metric: each fold's weights come from the other folds' rows alone
 * (a held-out row's target weighs no feature of its own output), and each row's neighbours are searched
 * among those rows only, so lists need no more than max(ks) + 1 entries. `lists` is left empty: the
 * model's part weighs the features on all rows (knnPart).
 */
function fitWeighedOof(space: KnnSpace, X: Float64Array, Z: Float64Array, n: number, F: number, y: Float64Array, folds: Int32Array[], opts: KnnOptions): KnnFit {
  const { oofOut, foldKs, foldPowers } = foldOutputs(n, y, folds, opts, (skip) => {
    const pool: number[] = [];
    for (let i = 0; i < n; i++) if (!skip[i]) pool.push(i);
    return chooseMetric(space, X, Z, n, F, y, Int32Array.from(pool), skip, opts);
  });
  return { space, Z, X, lists: { idx: new Int32Array(0), dist: new Float64Array(0), L: 0 }, oofOut, foldKs, foldPowers };
}

/** The model's part: all rows stored, k chosen by leave-one-out on all rows. */
export function knnPart(fit: KnnFit, n: number, F: number, y: Float64Array, opts: KnnOptions, weight: number): KnnPart {
  if (relevancePowers(opts).length > 0) {
    // the weighed metric of all rows, fitted only for a member that is kept
    const all = Int32Array.from({ length: n }, (_, i) => i);
    const { space, W, k } = chooseMetric(fit.space, fit.X as Float64Array, fit.Z, n, F, y, all, new Uint8Array(n), opts);
    return { n, nFeatures: F, ...space, Z: W, y: Float64Array.from(y), k, floor: opts.floor, weight };
  }
  const k = chooseK(fit.lists, n, new Uint8Array(n), y, opts);
  return { n, nFeatures: F, ...fit.space, Z: fit.Z, y: Float64Array.from(y), k, floor: opts.floor, weight };
}

/** The member's probabilities (n x 2) for encoded rows X (n x F). */
export function predictKnn(part: KnnPart, X: Float64Array, n: number, F: number): Float64Array {
  const Q = toSpace(part, X, n, F);
  const out = new Float64Array(n * 2);
  const cap = Math.min(part.k + 1, part.n);
  const bd = new Float64Array(cap);
  const bi = new Int32Array(cap);
  const N = part.n;
  const Z = part.Z;
  const cat = part.categorical;
  // a categorical mismatch's squared distance (the same product distance() adds)
  const mismatch = Float64Array.from(part.scale, (v) => v * v);
  let prior = 0;
  for (let j = 0; j < N; j++) prior += part.y[j];
  prior /= Math.max(1, N);
  let allNumeric = true;
  for (let f = 0; f < F; f++) if (cat[f]) allNumeric = false;
  for (let i = 0; i < n; i++) {
    let len = 0;
    const oq = i * F;
    for (let j = 0; j < N; j++) {
      // distance(), inlined: the same sum in the same order (features in index order)
      let s = 0;
      const oz = j * F;
      if (allNumeric) {
        for (let f = 0; f < F; f++) {
          const d = Q[oq + f] - Z[oz + f];
          s += d * d;
        }
      } else {
        for (let f = 0; f < F; f++) {
          if (cat[f]) {
            if (Q[oq + f] !== Z[oz + f]) s += mismatch[f];
          } else {
            const d = Q[oq + f] - Z[oz + f];
            s += d * d;
          }
        }
      }
      if (len < cap || s < bd[len - 1]) len = insert(bd, bi, len, cap, s, j);
    }
    const p = vote(bd, bi, len, part.k, part.y, part.floor, prior);
    out[i * 2] = 1 - p;
    out[i * 2 + 1] = p;
  }
  return out;
}

/**
 * KnnOptions.bootstrap: the ROC AUC gain of `mixed` over `model` (scores of the same held-out rows,
 * labels y) in `draws` resamples of those rows with replacement (a fixed seed): the share of resamples
 * with no gain (<= 0; a resample of one class counts as none) and the gains' standard deviation.
 */
export function bootstrapGain(y: Float64Array, model: Float64Array, mixed: Float64Array, draws: number): { noGain: number; sd: number } {
  const n = y.length;
  const rng = new Prng(0x6b6e6e);
  const yb = new Float64Array(n);
  const mb = new Float64Array(n);
  const xb = new Float64Array(n);
  let none = 0;
  let s1 = 0;
  let s2 = 0;
  let m = 0;
  for (let d = 0; d < draws; d++) {
    for (let j = 0; j < n; j++) {
      const i = rng.nextInt(n);
      yb[j] = y[i];
      mb[j] = model[i];
      xb[j] = mixed[i];
    }
    const g = rocAuc(yb, xb) - rocAuc(yb, mb);
    if (!(g > 0)) none++;
    if (Number.isFinite(g)) {
      s1 += g;
      s2 += g * g;
      m++;
    }
  }
  const mean = m > 0 ? s1 / m : 0;
  return { noGain: draws > 0 ? none / draws : 1, sd: m > 1 ? Math.sqrt(Math.max(0, s2 / m - mean * mean)) : NaN };
}
