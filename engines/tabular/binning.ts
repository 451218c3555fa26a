/**
 * Histogram binning. Numeric features get at most `maxBins` (<= 255) value bins; categorical
 * features use their category code as bin. Each feature has one extra bin, index `numBins[f]`,
 * for missing values, so the tree grower can learn where missing values go.
 */

export const MAX_BINS = 255;

export interface BinnedFeatureInfo {
  /** number of value bins per feature (missing bin index = numBins[f]) */
  numBins: Int32Array;
  /** 1 when the feature is categorical */
  isCategorical: Uint8Array;
  /** numeric: upper edges, bin b holds values v <= edges[b] (and > edges[b-1]); length numBins-1 */
  edges: Float64Array[];
}

/** Fits bin edges on a row-major matrix (n x F). */
export function fitBins(
  X: Float64Array,
  n: number,
  F: number,
  categorical: ArrayLike<number>,
  maxBins: number = MAX_BINS,
  minDataInBin = 3,
): BinnedFeatureInfo {
  if (maxBins < 2 || maxBins > MAX_BINS) throw new Error(`maxBins must be in [2, ${MAX_BINS}]`);
  const numBins = new Int32Array(F);
  const isCategorical = new Uint8Array(F);
  const edges: Float64Array[] = [];
  const col = new Float64Array(n);
  for (let f = 0; f < F; f++) {
    if (categorical[f] > 0) {
      isCategorical[f] = 1;
      numBins[f] = Math.max(1, Math.min(MAX_BINS, categorical[f]));
      edges.push(new Float64Array(0));
      continue;
    }
    let m = 0;
    for (let i = 0; i < n; i++) {
      const v = X[i * F + f];
      if (v === v) col[m++] = v;
    }
    const vals = col.subarray(0, m).slice().sort();
    // distinct values and their counts
    const distinct: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i < m; i++) {
      if (i === 0 || vals[i] !== vals[i - 1]) {
        distinct.push(vals[i]);
        counts.push(1);
      } else counts[counts.length - 1]++;
    }
    // Greedy bins: at least `minDataInBin` rows each (about m / maxBins when there are more distinct
    // values than bins); each edge lies between two distinct values.
    const target = distinct.length <= maxBins ? minDataInBin : Math.max(minDataInBin, m / maxBins);
    const e: number[] = [];
    let acc = 0;
    let left = m;
    for (let i = 0; i + 1 < distinct.length && e.length < maxBins - 1; i++) {
      acc += counts[i];
      left -= counts[i];
      if (acc >= target && left >= minDataInBin) {
        const a = distinct[i];
        const b = distinct[i + 1];
        let mid = a + (b - a) / 2;
        if (!(mid >= a && mid < b)) mid = a;
        e.push(mid);
        acc = 0;
      }
    }
    numBins[f] = Math.max(1, e.length + 1);
    edges.push(Float64Array.from(e));
  }
  return { numBins, isCategorical, edges };
}

export function binValue(info: BinnedFeatureInfo, f: number, v: number): number {
  if (v !== v) return info.numBins[f];
  if (info.isCategorical[f]) {
    const c = v | 0;
    return c >= 0 && c < info.numBins[f] ? c : info.numBins[f];
  }
  const e = info.edges[f];
  let lo = 0;
  let hi = e.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (v <= e[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Bins a row-major matrix into a row-major Uint8Array (n x F). */
export function transformBins(info: BinnedFeatureInfo, X: Float64Array, n: number, F: number): Uint8Array {
  const out = new Uint8Array(n * F);
  for (let i = 0; i < n; i++) {
    const base = i * F;
    for (let f = 0; f < F; f++) out[base + f] = binValue(info, f, X[base + f]);
  }
  return out;
}
