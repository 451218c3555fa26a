/**
 * Explanations: permutation importance on held-out rows. Each internal fold model is scored on
 * the rows it did not train on; the values of one input column (all its encoded features
 * together, e.g. the parts of a date) are shuffled and the increase in loss (log loss, or squared
 * error for regression) is measured. Importances are the positive increases, normalised to shares
 * that sum to 1. When no column increases the loss, split gains are used instead.
 */
import { goesLeft, leafNode, predictRaw, type FlatPredictor } from './predictor';
import { Prng } from './prng';
import type { FeatureSpec } from './schema';
import { rawToOutput, takeRows, type FoldModel, type InternalTask } from './train';

export interface Factor {
  feature: string;
  importance: number;
}

function meanLoss(task: InternalTask, out: Float64Array, y: Float64Array, C: number): number {
  let s = 0;
  const n = y.length;
  if (task === 'regression') {
    for (let i = 0; i < n; i++) s += (out[i] - y[i]) ** 2;
  } else {
    for (let i = 0; i < n; i++) s -= Math.log(Math.max(1e-15, out[i * C + y[i]]));
  }
  return s / n;
}

/**
 * Each column's mean rise in loss over the fold models when its values are shuffled among their
 * held-out rows. `scoring` 'whole' scores every permuted copy through every tree, the reference the
 * default ('reuse', permutedRawReusingLeaves) equals bit for bit.
 */
export function permutationImportance(
  X: Float64Array,
  F: number,
  y: Float64Array,
  task: InternalTask,
  nClasses: number,
  folds: FoldModel[],
  features: FeatureSpec[],
  seed: number,
  maxRowsPerFold = 2000,
  scoring: 'reuse' | 'whole' = 'reuse',
): Map<string, number> {
  const rng = new Prng(seed);
  const C = task === 'regression' ? 1 : nClasses;
  const groups = new Map<string, number[]>();
  features.forEach((f, j) => {
    const g = groups.get(f.column) ?? [];
    g.push(j);
    groups.set(f.column, g);
  });
  const names = [...groups.keys()];
  const columns = [...groups.values()];
  const total = new Map<string, number>();
  for (const col of names) total.set(col, 0);
  for (const fm of folds) {
    let rows = Array.from(fm.validRows);
    if (rows.length === 0) continue;
    if (rows.length > maxRowsPerFold) rows = rng.shuffle(rows).slice(0, maxRowsPerFold);
    const m = rows.length;
    const Xv = takeRows(X, F, rows);
    const yv = takeRows(y, 1, rows);
    const baseRaw = predictRaw(fm.predictor, Xv, m);
    const base = meanLoss(task, rawToOutput(task, baseRaw, m, C), yv, C);
    // one shuffle per column, in the columns' order, as each column's turn used to draw it
    const perms = columns.map(() => rng.shuffle(Int32Array.from({ length: m }, (_, i) => i)));
    const reused = scoring === 'reuse' && columns.length * m * fm.predictor.nOutputs <= PERMUTED_SCORES_MAX
      ? permutedRawReusingLeaves(fm.predictor, Xv, baseRaw, m, columns, perms)
      : null;
    names.forEach((col, c) => {
      // scored whole one copy at a time, so that only one is held
      const raw = reused ? reused[c] : predictRaw(fm.predictor, permutedCopy(Xv, F, m, columns[c], perms[c]), m);
      const l = meanLoss(task, rawToOutput(task, raw, m, C), yv, C);
      total.set(col, (total.get(col) as number) + (l - base) / folds.length);
    });
  }
  return total;
}

/** The held-out rows with one column's features (`idx`) taken from the rows `perm` names. */
function permutedCopy(Xv: Float64Array, F: number, m: number, idx: number[], perm: Int32Array): Float64Array {
  const Xp = Float64Array.from(Xv);
  for (let j = 0; j < m; j++) for (const f of idx) Xp[j * F + f] = Xv[perm[j] * F + f];
  return Xp;
}

/** Whether row `from` holds, in the features `idx`, values every split routes as row j's: equal (+0 and -0 included) or both missing. */
function drewOwnValues(Xv: Float64Array, F: number, j: number, from: number, idx: number[]): boolean {
  for (const f of idx) {
    const a = Xv[from * F + f];
    const b = Xv[j * F + f];
    if (a !== b && (a === a || b === b)) return false;
  }
  return true;
}

/** permutedRawReusingLeaves keeps every column's scores of a fold: above this many (columns x rows x outputs), each permuted copy is scored whole */
const PERMUTED_SCORES_MAX = 2_000_000;
/** most entries of permutedRawReusingLeaves' per-block leaf values and path bits (trees x rows x words of column bits) */
const PATH_WORDS_MAX = 1 << 20;

/**
 * predictRaw of each column's permuted copy of the rows (permutedCopy), bit for bit, without routing
 * a permuted row through the trees where the row's own path tests none of the column's features: the
 * permuted row differs only in those features, so it takes the same path to the same leaf, whose value
 * is read from the row's own routing (done once per block of rows, noting which columns each path
 * tests); a row whose drawn values equal its own keeps its scores outright. Each row's scores still add the trees' values in tree order from the initial scores, exactly
 * predictRaw's additions. Scoring every permuted copy whole was the cost of explanations: a pass over
 * every tree per column.
 */
function permutedRawReusingLeaves(p: FlatPredictor, Xv: Float64Array, baseRaw: Float64Array, m: number, columns: number[][], perms: Int32Array[]): Float64Array[] {
  const F = p.nFeatures;
  const K = p.nOutputs;
  const T = p.treeRoot.length;
  const { treeRoot, treeOutput, leafValue, init, nodeFeature, nodeLeft, nodeRight } = p;
  const columnOf = new Int32Array(F).fill(-1);
  columns.forEach((idx, c) => idx.forEach((f) => (columnOf[f] = c)));
  const words = Math.ceil(columns.length / 32);
  const B = Math.max(1, Math.min(128, Math.floor(PATH_WORDS_MAX / Math.max(1, T * words))));
  const out = columns.map(() => new Float64Array(m * K));
  const own = new Float64Array(T * B);
  // bit c of a (row, tree) entry: the row's path in the tree tests a feature of column c
  const tested = new Int32Array(T * B * words);
  const row = new Float64Array(F);
  for (let b0 = 0; b0 < m; b0 += B) {
    const b1 = Math.min(m, b0 + B);
    tested.fill(0);
    for (let j = b0; j < b1; j++) {
      for (let t = 0; t < T; t++) {
        const e = (j - b0) * T + t;
        let node = treeRoot[t];
        while (node >= 0) {
          const c = columnOf[nodeFeature[node]];
          tested[e * words + (c >>> 5)] |= 1 << (c & 31);
          node = goesLeft(p, node, Xv, j * F) ? nodeLeft[node] : nodeRight[node];
        }
        own[e] = leafValue[~node];
      }
    }
    columns.forEach((idx, c) => {
      const perm = perms[c];
      const raw = out[c];
      const word = c >>> 5;
      const bit = 1 << (c & 31);
      for (let j = b0; j < b1; j++) {
        const ob = j * K;
        // a row that drew its own values (equal, or both missing) is the row itself: its scores
        if (drewOwnValues(Xv, F, j, perm[j], idx)) {
          for (let k = 0; k < K; k++) raw[ob + k] = baseRaw[ob + k];
          continue;
        }
        for (let f = 0; f < F; f++) row[f] = Xv[j * F + f];
        for (const f of idx) row[f] = Xv[perm[j] * F + f];
        for (let k = 0; k < K; k++) raw[ob + k] = init[k];
        const e0 = (j - b0) * T;
        for (let t = 0; t < T; t++) {
          const e = e0 + t;
          raw[ob + treeOutput[t]] += (tested[e * words + word] & bit) !== 0 ? leafValue[~leafNode(p, treeRoot[t], row, 0)] : own[e];
        }
      }
    });
  }
  return out;
}

export function gainImportance(p: FlatPredictor, features: FeatureSpec[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of features) out.set(f.column, 0);
  for (let j = 0; j < p.nodeFeature.length; j++) {
    const col = features[p.nodeFeature[j]].column;
    out.set(col, (out.get(col) as number) + p.nodeGain[j]);
  }
  return out;
}

/** Positive importances as shares summing to 1, largest first (ties by name), at most `top`. */
export function toShares(imp: Map<string, number>, top = 10): Factor[] {
  const pos = [...imp.entries()].filter(([, v]) => v > 0);
  const sum = pos.reduce((s, [, v]) => s + v, 0);
  if (sum <= 0) return [];
  return pos
    .map(([feature, v]) => ({ feature, importance: v / sum }))
    .sort((a, b) => b.importance - a.importance || (a.feature < b.feature ? -1 : 1))
    .slice(0, top);
}
