/**
 * Explanations: permutation importance on held-out rows. Each internal fold model is scored on
 * the rows it did not train on; the values of one input column (all its encoded features
 * together, e.g. the parts of a date) are shuffled and the increase in loss (log loss, or squared
 * error for regression) is measured. Importances are the positive increases, normalised to shares
 * that sum to 1. When no column increases the loss, split gains are used instead.
 */
import { predictRaw, type FlatPredictor } from './predictor';
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
): Map<string, number> {
  const rng = new Prng(seed);
  const C = task === 'regression' ? 1 : nClasses;
  const groups = new Map<string, number[]>();
  features.forEach((f, j) => {
    const g = groups.get(f.column) ?? [];
    g.push(j);
    groups.set(f.column, g);
  });
  const total = new Map<string, number>();
  for (const col of groups.keys()) total.set(col, 0);
  for (const fm of folds) {
    let rows = Array.from(fm.validRows);
    if (rows.length === 0) continue;
    if (rows.length > maxRowsPerFold) rows = rng.shuffle(rows).slice(0, maxRowsPerFold);
    const m = rows.length;
    const Xv = takeRows(X, F, rows);
    const yv = takeRows(y, 1, rows);
    const base = meanLoss(task, rawToOutput(task, predictRaw(fm.predictor, Xv, m), m, C), yv, C);
    const Xp = new Float64Array(Xv.length);
    for (const [col, idx] of groups) {
      Xp.set(Xv);
      const perm = rng.shuffle(Int32Array.from({ length: m }, (_, i) => i));
      for (let j = 0; j < m; j++) for (const f of idx) Xp[j * F + f] = Xv[perm[j] * F + f];
      const l = meanLoss(task, rawToOutput(task, predictRaw(fm.predictor, Xp, m), m, C), yv, C);
      total.set(col, (total.get(col) as number) + (l - base) / folds.length);
    }
  }
  return total;
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
