/**
 * Engine 11's group member. Some tables hold several rows per underlying record (an incident with
 * several uses of force, the customers of one neighbourhood, the résumés sent to one advert), and the
 * rows of a record share its outcome. No single column names the record, but a combination of columns
 * does, and a row whose combination was seen in training carries that record's outcome: CatBoost finds
 * such combinations with its target statistics over combined categorical features, which a tree's
 * splits on one column at a time reach only after many levels.
 *
 * The member finds one combination (the key) greedily: starting from no column, it adds the column
 * whose out-of-fold target statistic (class frequencies or mean of the rows sharing the key in the
 * other folds, smoothed towards the prior) lowers the out-of-fold loss most, while the loss falls.
 * The member's output for a row treats the model's output as a prior worth `s` rows and the row's
 * record as evidence: `(sum + s * model) / (count + s)` (class counts, or the sum of the values), so a
 * record seen often outweighs the model and one seen once moves it a little; it is mixed with the
 * model's output by a weight w, and a row of an unseen record keeps the model's output exactly. `s` and
 * w are chosen on the trees' own folds (pipeline.ts, addGroupMember), and the member is kept only when
 * it lowers the model's out-of-fold loss by at least a material share (minGain) on data of at least
 * minRows rows: on small data the key search finds chance combinations (bench/RESULTS.md, engine
 * 11.0.0). The part the model keeps is a lookup table from key values to counts and sums.
 */
import type { InternalTask } from './train';

export interface GroupOptions {
  /** fitted only on data of at least this many rows */
  minRows: number;
  /** kept only when the mixture lowers the model's out-of-fold loss by at least this share */
  minGain: number;
  /** weight, in rows, of the prior in the key search's statistic */
  smooth: number;
  /** at most this many columns in the key */
  maxColumns: number;
  /** only columns of at most this many distinct values are tried (a measurement is not part of a record's name) */
  maxValues: number;
  /**
   * engine 13 (4; absent in 11.0.0 and 12.0.0, pipeline.ts GROUP_OPTIONS_V13): the key search's statistic
   * smoothed towards the model's own out-of-fold output worth this many rows instead of towards the
   * prior by `smooth`: once a key's groups are small, a further column gains only what the model does
   * not already hold, so the search goes on to the columns that name records (the first columns are
   * still those of the strongest main effects: the search starts from one group). Only the search
   * changes: the member's (s, w), its gates and its part are as without it.
   */
  centred?: number;
}

export const DEFAULT_GROUP_OPTIONS: GroupOptions = { minRows: 1000, minGain: 0.025, smooth: 1, maxColumns: 12, maxValues: 255 };

/** The part of a model that holds its group member: the key's lookup table and its weight in the mixture. */
export interface GroupPart {
  /** outputs per row: class probabilities (classes) or one value */
  nOutputs: number;
  /** the key's features (indices into the encoded row) */
  columns: Int32Array;
  /** each key column's training values in code order, concatenated (NaN for missing) */
  values: Float64Array;
  /** where each key column's values start in `values` (columns + 1 entries) */
  valueStart: Int32Array;
  /** each seen key: its columns' codes (keys x columns), in ascending order (first column first) */
  keys: Int32Array;
  /** each seen key's training rows: class counts, or the sum of the values (keys x nOutputs) */
  sums: Float64Array;
  /** each seen key's number of training rows */
  counts: Float64Array;
  /** weight of the model's own output, in rows, against a record's rows */
  smooth: number;
  /** weight of the member's output in the mixture with the model's */
  weight: number;
}

/** The weights of the model's output, in rows, that the member chooses from (addGroupMember). */
export const SMOOTH_GRID = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];

/** Outputs of a task (class probabilities, or one value). */
export function groupOutputs(task: InternalTask, nClasses: number): number {
  return task === 'regression' ? 1 : nClasses;
}

/** Per feature: the code of every row's value (first-seen order) and the number of distinct values. */
function columnCodes(X: Float64Array, n: number, F: number, f: number): { codes: Int32Array; distinct: number } {
  const index = new Map<number, number>();
  const codes = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const v = X[i * F + f];
    let c = index.get(v);
    if (c === undefined) {
      c = index.size;
      index.set(v, c);
    }
    codes[i] = c;
  }
  return { codes, distinct: index.size };
}

/**
 * Scratch space of a key search, reused by every candidate: a pair table (dense ids of (group, code)
 * pairs while there are at most PAIR_TABLE of them, a Map beyond) and the statistics' sums.
 */
interface Scratch {
  pairs: Int32Array;
  touched: Int32Array;
  total: Float64Array;
  inFold: Float64Array;
  /** classes: log(c + smooth) for every count c of rows, and log(a + smooth * prior[k]) for every count a of class k (K x (n + 1)) */
  logCount: Float64Array;
  logClass: Float64Array;
}

const PAIR_TABLE = 1 << 21;

/** The groups of `gid` refined by a column's codes: a dense id per distinct (group, code) pair. */
function refine(gid: Int32Array, groups: number, codes: Int32Array, distinct: number, scratch?: Scratch): { gid: Int32Array; groups: number } {
  const n = gid.length;
  const out = new Int32Array(n);
  let next = 0;
  if (scratch && groups * distinct <= PAIR_TABLE) {
    const { pairs, touched } = scratch;
    for (let i = 0; i < n; i++) {
      const k = gid[i] * distinct + codes[i];
      let g = pairs[k] - 1;
      if (g < 0) {
        g = next++;
        pairs[k] = g + 1;
        touched[g] = k;
      }
      out[i] = g;
    }
    for (let g = 0; g < next; g++) pairs[touched[g]] = 0;
    return { gid: out, groups: next };
  }
  const index = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const k = gid[i] * distinct + codes[i];
    let g = index.get(k);
    if (g === undefined) {
      g = next++;
      index.set(k, g);
    }
    out[i] = g;
  }
  return { gid: out, groups: next };
}

/** The prior: class frequencies, or the mean. */
function priorOf(y: Float64Array, K: number, regression: boolean): Float64Array {
  const prior = new Float64Array(K);
  for (let i = 0; i < y.length; i++) {
    if (regression) prior[0] += y[i] / y.length;
    else prior[y[i]] += 1 / y.length;
  }
  return prior;
}

/**
 * Per group, the count and sums of its rows' targets (total), and the same per fold of the held rows.
 * One loop per task kind, so that a class is read as a whole number once per row.
 */
function groupSums(gid: Int32Array, groups: number, y: Float64Array, fold: Int32Array, nFolds: number, K: number, regression: boolean, scratch?: Scratch): { total: Float64Array; inFold: Float64Array } {
  const width = K + 1;
  const total = scratch ? scratch.total.fill(0, 0, groups * width) : new Float64Array(groups * width);
  const inFold = scratch ? scratch.inFold.fill(0, 0, nFolds * groups * width) : new Float64Array(nFolds * groups * width);
  const n = y.length;
  if (regression) {
    for (let i = 0; i < n; i++) {
      const g = gid[i];
      const v = y[i];
      total[g * 2 + 1] += 1;
      total[g * 2] += v;
      const f = fold[i];
      if (f >= 0) {
        const s = (f * groups + g) * 2;
        inFold[s + 1] += 1;
        inFold[s] += v;
      }
    }
  } else {
    for (let i = 0; i < n; i++) {
      const g = gid[i];
      const k = y[i] | 0;
      const t = g * width;
      total[t + K] += 1;
      total[t + k] += 1;
      const f = fold[i];
      if (f >= 0) {
        const s = (f * groups + g) * width;
        inFold[s + K] += 1;
        inFold[s + k] += 1;
      }
    }
  }
  return { total, inFold };
}

/**
 * Out-of-fold statistics of a grouping, one array per smoothing weight in `smooths` (the groups' sums
 * counted once): each held row (fold >= 0) gets the statistic of the rows of its group outside its
 * fold, never its own target, smoothed by that many rows' worth of the prior, or of `centre` (n x K, the
 * model's out-of-fold outputs) when given. Rows with fold < 0 only contribute.
 */
export function groupOofs(
  gid: Int32Array,
  groups: number,
  y: Float64Array,
  fold: Int32Array,
  nFolds: number,
  K: number,
  regression: boolean,
  smooths: number[],
  centre?: Float64Array,
): Float64Array[] {
  const { total, inFold } = groupSums(gid, groups, y, fold, nFolds, K, regression);
  const prior = priorOf(y, K, regression);
  return smooths.map((smooth) => {
    const out = new Float64Array(y.length * K).fill(NaN);
    for (let i = 0; i < y.length; i++) {
      if (fold[i] < 0) continue;
      const t = gid[i] * (K + 1);
      const s = (fold[i] * groups + gid[i]) * (K + 1);
      const count = total[t + K] - inFold[s + K];
      for (let k = 0; k < K; k++) out[i * K + k] = (total[t + k] - inFold[s + k] + smooth * (centre ? centre[i * K + k] : prior[k])) / (count + smooth);
    }
    return out;
  });
}

/** -log(1e-15): outputLoss's largest loss of a row. */
const MAX_ROW_LOG_LOSS = -Math.log(1e-15);

/**
 * outputLoss of groupOofs' statistics for one smoothing weight, without building them (the key search's inner loop). Counts
 * are whole numbers, so for classes a row's -log p is a difference of two precomputed logarithms.
 */
function groupOofLoss(gid: Int32Array, groups: number, y: Float64Array, fold: Int32Array, nFolds: number, K: number, regression: boolean, smooth: number, prior: Float64Array, scratch: Scratch): number {
  const { total, inFold } = groupSums(gid, groups, y, fold, nFolds, K, regression, scratch);
  const { logCount, logClass } = scratch;
  const stride = y.length + 1;
  let loss = 0;
  let count = 0;
  const n = y.length;
  if (regression) {
    const centre = smooth * prior[0];
    for (let i = 0; i < n; i++) {
      const f = fold[i];
      if (f < 0) continue;
      const t = gid[i] * 2;
      const s = (f * groups + gid[i]) * 2;
      loss += ((total[t] - inFold[s] + centre) / (total[t + 1] - inFold[s + 1] + smooth) - y[i]) ** 2;
      count++;
    }
  } else {
    const width = K + 1;
    for (let i = 0; i < n; i++) {
      const f = fold[i];
      if (f < 0) continue;
      const k = y[i] | 0;
      const t = gid[i] * width;
      const s = (f * groups + gid[i]) * width;
      // counts are whole numbers held as doubles: |0 makes them the integer indices they are
      loss += Math.min(MAX_ROW_LOG_LOSS, logCount[(total[t + K] - inFold[s + K]) | 0] - logClass[k * stride + ((total[t + k] - inFold[s + k]) | 0)]);
      count++;
    }
  }
  return count > 0 ? loss / count : NaN;
}

/**
 * GroupOptions.centred (engine 13): the out-of-fold loss of a grouping's statistics smoothed towards
 * `centre` (n x K, the model's out-of-fold outputs) worth `weight` rows, as groupOofs builds them.
 */
function centredOofLoss(gid: Int32Array, groups: number, y: Float64Array, fold: Int32Array, nFolds: number, K: number, regression: boolean, weight: number, centre: Float64Array, scratch: Scratch): number {
  const { total, inFold } = groupSums(gid, groups, y, fold, nFolds, K, regression, scratch);
  const width = K + 1;
  let loss = 0;
  let count = 0;
  for (let i = 0; i < y.length; i++) {
    const f = fold[i];
    if (f < 0) continue;
    const t = gid[i] * width;
    const s = (f * groups + gid[i]) * width;
    const rows = total[t + K] - inFold[s + K] + weight;
    if (regression) loss += ((total[t] - inFold[s] + weight * centre[i]) / rows - y[i]) ** 2;
    else {
      const k = y[i] | 0;
      loss += Math.min(MAX_ROW_LOG_LOSS, -Math.log((total[t + k] - inFold[s + k] + weight * centre[i * K + k]) / rows));
    }
    count++;
  }
  return count > 0 ? loss / count : NaN;
}

/** Mean loss of outputs on the rows that have them: log loss (classes) or squared error. */
export function outputLoss(y: Float64Array, out: Float64Array, K: number, regression: boolean): number {
  let loss = 0;
  let count = 0;
  for (let i = 0; i < y.length; i++) {
    if (Number.isNaN(out[i * K])) continue;
    count++;
    if (regression) loss += (out[i] - y[i]) ** 2;
    else loss -= Math.log(Math.max(1e-15, out[i * K + y[i]]));
  }
  return count > 0 ? loss / count : NaN;
}

/** The rows a key is searched and fitted on: the encoded matrix (n x F) and targets (class indices or values). */
export interface GroupRows {
  X: Float64Array;
  n: number;
  F: number;
  y: Float64Array;
  /** outputs per row (groupOutputs) */
  K: number;
  regression: boolean;
}

export interface GroupKey {
  /** the key's features, in the order they were added */
  columns: number[];
  /** each row's group under the key */
  gid: Int32Array;
  groups: number;
  /** out-of-fold loss of the key's statistic, and of the prior alone (no column) */
  loss: number;
  base: number;
}

/**
 * The greedy key search: from no column, add the column whose out-of-fold statistic has the lowest
 * loss, while that loss falls, up to `maxColumns` columns. Columns with one value cannot refine a
 * key, and those of more than `maxValues` values are measurements, not names: neither is tried.
 */
export function searchGroupKey(rows: GroupRows, fold: Int32Array, nFolds: number, opts: GroupOptions, centre?: Float64Array): GroupKey {
  const { X, n, F, y, K, regression } = rows;
  const candidates: Array<{ f: number; codes: Int32Array; distinct: number }> = [];
  for (let f = 0; f < F; f++) {
    const c = columnCodes(X, n, F, f);
    if (c.distinct > 1 && c.distinct <= opts.maxValues) candidates.push({ f, ...c });
  }
  const width = K + 1;
  const scratch: Scratch = {
    pairs: new Int32Array(Math.min(PAIR_TABLE, n * n)),
    touched: new Int32Array(n),
    total: new Float64Array(n * width),
    inFold: new Float64Array(nFolds * n * width),
    logCount: regression ? new Float64Array(0) : Float64Array.from({ length: n + 1 }, (_, c) => Math.log(c + opts.smooth)),
    logClass: new Float64Array(regression ? 0 : K * (n + 1)),
  };
  const prior = priorOf(y, K, regression);
  for (let k = 0; k < (regression ? 0 : K); k++) for (let a = 0; a <= n; a++) scratch.logClass[k * (n + 1) + a] = Math.log(a + opts.smooth * prior[k]);
  let gid: Int32Array = new Int32Array(n);
  let groups = 1;
  const centred = opts.centred !== undefined && centre !== undefined ? { weight: opts.centred, centre } : null;
  const lossOf = (g: Int32Array, count: number): number => centred
    ? centredOofLoss(g, count, y, fold, nFolds, K, regression, centred.weight, centred.centre, scratch)
    : groupOofLoss(g, count, y, fold, nFolds, K, regression, opts.smooth, prior, scratch);
  const base = lossOf(gid, groups);
  let loss = base;
  const columns: number[] = [];
  while (columns.length < opts.maxColumns) {
    let best: { f: number; gid: Int32Array; groups: number; loss: number } | null = null;
    for (const c of candidates) {
      if (columns.includes(c.f)) continue;
      const r = refine(gid, groups, c.codes, c.distinct, scratch);
      const l = lossOf(r.gid, r.groups);
      if (!best || l < best.loss) best = { f: c.f, gid: r.gid, groups: r.groups, loss: l };
    }
    if (!best || !(best.loss < loss)) break;
    columns.push(best.f);
    gid = best.gid;
    groups = best.groups;
    loss = best.loss;
  }
  return { columns, gid, groups, loss, base };
}

/** The lookup table of a key over all rows, the model's output worth `smooth` rows (the part a model keeps, without its weight). */
export function fitGroupTable(rows: GroupRows, columns: number[], smooth: number): Omit<GroupPart, 'weight'> {
  const { X, n, F, y, K, regression } = rows;
  const L = columns.length;
  const perColumn = columns.map((f) => columnCodes(X, n, F, f));
  const valueStart = new Int32Array(L + 1);
  perColumn.forEach((c, l) => (valueStart[l + 1] = valueStart[l] + c.distinct));
  const values = new Float64Array(valueStart[L]);
  perColumn.forEach((c, l) => {
    for (let i = 0; i < n; i++) values[valueStart[l] + c.codes[i]] = X[i * F + columns[l]];
  });
  let gid: Int32Array = new Int32Array(n);
  let groups = 1;
  for (const c of perColumn) ({ gid, groups } = refine(gid, groups, c.codes, c.distinct));
  const codesOfGroup = new Int32Array(groups * L);
  const sums = new Float64Array(groups * (K + 1));
  for (let i = 0; i < n; i++) {
    const g = gid[i];
    for (let l = 0; l < L; l++) codesOfGroup[g * L + l] = perColumn[l].codes[i];
    sums[g * (K + 1) + K] += 1;
    if (regression) sums[g * (K + 1)] += y[i];
    else sums[g * (K + 1) + y[i]] += 1;
  }
  // keys in ascending order, so that a lookup is a binary search (no index beyond the artefact's arrays)
  const order = Array.from({ length: groups }, (_, g) => g).sort((a, b) => compareKey(codesOfGroup, a * L, codesOfGroup, b * L, L));
  const keys = new Int32Array(groups * L);
  const groupSumsOut = new Float64Array(groups * K);
  const counts = new Float64Array(groups);
  order.forEach((g, j) => {
    keys.set(codesOfGroup.subarray(g * L, g * L + L), j * L);
    groupSumsOut.set(sums.subarray(g * (K + 1), g * (K + 1) + K), j * K);
    counts[j] = sums[g * (K + 1) + K];
  });
  return { nOutputs: K, columns: Int32Array.from(columns), values, valueStart, keys, sums: groupSumsOut, counts, smooth };
}

/** Lexicographic order of two keys of L codes. */
function compareKey(a: ArrayLike<number>, offA: number, b: ArrayLike<number>, offB: number, L: number): number {
  for (let l = 0; l < L; l++) {
    const d = a[offA + l] - b[offB + l];
    if (d !== 0) return d;
  }
  return 0;
}

/** Per key column of a loaded part, value -> code (at most GroupOptions.maxValues entries each), built once. */
const codeMaps = new WeakMap<GroupPart, Array<Map<number, number>>>();

function codeMapsOf(part: GroupPart): Array<Map<number, number>> {
  let maps = codeMaps.get(part);
  if (maps) return maps;
  maps = Array.from({ length: part.columns.length }, (_, l) => {
    const m = new Map<number, number>();
    for (let j = part.valueStart[l]; j < part.valueStart[l + 1]; j++) m.set(part.values[j], j - part.valueStart[l]);
    return m;
  });
  codeMaps.set(part, maps);
  return maps;
}

/**
 * Mixes the member into a model's outputs for an encoded matrix, in place (n x nOutputs): a row of a
 * seen record gets `(1 - weight) * out + weight * (sums + smooth * out) / (count + smooth)`, a row of an
 * unseen one keeps `out`.
 */
export function mixGroup(part: GroupPart, X: Float64Array, n: number, F: number, out: Float64Array): void {
  const codeOf = codeMapsOf(part);
  const K = part.nOutputs;
  const L = part.columns.length;
  const G = part.keys.length / L;
  const { smooth, weight: w } = part;
  const codes = new Int32Array(L);
  for (let i = 0; i < n; i++) {
    let seen = true;
    for (let l = 0; l < L && seen; l++) {
      const c = codeOf[l].get(X[i * F + part.columns[l]]);
      if (c === undefined) seen = false;
      else codes[l] = c;
    }
    let g = -1;
    for (let lo = 0, hi = G - 1; seen && lo <= hi; ) {
      const mid = (lo + hi) >> 1;
      const d = compareKey(part.keys, mid * L, codes, 0, L);
      if (d === 0) {
        g = mid;
        break;
      }
      if (d < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    if (g < 0) continue;
    const count = part.counts[g];
    for (let k = 0; k < K; k++) {
      const o = out[i * K + k];
      out[i * K + k] = (1 - w) * o + w * ((part.sums[g * K + k] + smooth * o) / (count + smooth));
    }
  }
}
