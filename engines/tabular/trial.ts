/**
 * Trial run for dataset validation: random (stratified) split, fit, score against the lazy answer,
 * and a verdict:
 * - `weak`: suspiciously good, a single column alone almost determines the target (typically a
 *   value filled in after the event); the column is named;
 * - `no_signal`: the model's per-row loss on the test rows is not significantly lower than the lazy
 *   answer's (paired comparison, improvement under 2 standard errors);
 * - `usable` otherwise.
 */
import { predictRaw } from './predictor';
import { prepare, scoreOutputs, resolveConfig, type Prepared, type ValidationScore } from './pipeline';
import type { Row, TaskOption } from './schema';
import { fitCore, makeFolds, rawToOutput, takeRows, type EngineConfig, type EngineConfigOverride, type InternalTask } from './train';
import { accuracy } from './metrics';

export interface TrialReport {
  verdict: { level: 'usable' | 'weak' | 'no_signal'; message: string; column?: string };
  metrics: {
    metric: ValidationScore['metric'];
    score: number;
    baseline_score: number;
    higher_is_better: boolean;
    test_rows: number;
    train_rows: number;
  };
  hint: string;
}

/** Near-perfect level for a single column (AUC, accuracy or R^2). */
export const LEAK_LEVEL = 0.97;

function subset(p: Prepared, rows: number[]): { X: Float64Array; y: Float64Array } {
  return { X: takeRows(p.X, p.F, rows), y: takeRows(p.y, 1, rows) };
}

/** Goodness in [.., 1]: AUC (binary), accuracy (multiclass), R^2 (regression). */
function goodness(task: InternalTask, y: Float64Array, out: Float64Array, nClasses: number): number {
  if (task === 'binary') return scoreOutputs(task, y, out, nClasses).score;
  if (task === 'multiclass') return accuracy(y, out, nClasses);
  let mean = 0;
  for (let i = 0; i < y.length; i++) mean += y[i] / y.length;
  let ss = 0;
  let st = 0;
  for (let i = 0; i < y.length; i++) {
    ss += (y[i] - out[i]) ** 2;
    st += (y[i] - mean) ** 2;
  }
  return st > 0 ? 1 - ss / st : 0;
}

function rowLosses(task: InternalTask, y: Float64Array, out: Float64Array, C: number): Float64Array {
  const l = new Float64Array(y.length);
  for (let i = 0; i < y.length; i++) {
    l[i] = task === 'regression' ? (out[i] - y[i]) ** 2 : -Math.log(Math.max(1e-15, out[i * C + y[i]]));
  }
  return l;
}

export function trialRun(rows: Row[], options: { target: string; task?: TaskOption; seed?: number; config?: EngineConfigOverride }): TrialReport {
  const seed = options.seed ?? 42;
  const p = prepare(rows, options.target, options.task);
  const C = p.task === 'regression' ? 1 : p.nClasses;
  // 75 / 25 split, stratified for classification
  const fold = makeFolds(p.y, 4, seed, p.task === 'regression' ? 0 : p.nClasses);
  const trainRows: number[] = [];
  const testRows: number[] = [];
  for (let i = 0; i < p.n; i++) (fold[i] === 0 ? testRows : trainRows).push(i);
  const tr = subset(p, trainRows);
  const te = subset(p, testRows);
  const base = resolveConfig({ ...p, n: trainRows.length }, options.config);
  const cfg: EngineConfig = { ...base, folds: 1, models: 1 };
  const core = fitCore({ X: tr.X, n: trainRows.length, F: p.F, categorical: p.categorical, y: tr.y, task: p.task, nClasses: p.nClasses }, cfg, seed + 1);
  const out = rawToOutput(p.task, predictRaw(core.predictor, te.X, testRows.length), testRows.length, p.nClasses);
  const score = scoreOutputs(p.task, te.y, out, p.nClasses, tr.y);
  const metrics = {
    metric: score.metric,
    score: score.score,
    baseline_score: score.baseline_score,
    higher_is_better: score.higher_is_better,
    test_rows: testRows.length,
    train_rows: trainRows.length,
  };
  const report = p.analysis.report;
  const target = options.target;

  // lazy answer's outputs: class priors or mean of the training rows
  const lazy = new Float64Array(testRows.length * C);
  if (p.task === 'regression') {
    let mean = 0;
    for (let i = 0; i < tr.y.length; i++) mean += tr.y[i] / tr.y.length;
    lazy.fill(mean);
  } else {
    const prior = new Float64Array(C);
    for (let i = 0; i < tr.y.length; i++) prior[tr.y[i]] += 1 / tr.y.length;
    for (let i = 0; i < testRows.length; i++) lazy.set(prior, i * C);
  }
  const lm = rowLosses(p.task, te.y, out, C);
  const lb = rowLosses(p.task, te.y, lazy, C);
  let md = 0;
  for (let i = 0; i < lm.length; i++) md += (lb[i] - lm[i]) / lm.length;
  let vd = 0;
  for (let i = 0; i < lm.length; i++) vd += (lb[i] - lm[i] - md) ** 2 / Math.max(1, lm.length - 1);
  const se = Math.sqrt(vd / lm.length);
  const significant = md > 0 && md > 2 * se;
  const fullGood = goodness(p.task, te.y, out, p.nClasses);

  // leak check: when the model is near-perfect, look for one column that alone is near-perfect
  if (significant && fullGood >= LEAK_LEVEL - 0.02) {
    const cols = [...new Set(p.analysis.features.map((f) => f.column))];
    let bestCol: string | null = null;
    let bestScore = -Infinity;
    for (const col of cols) {
      const idx = p.analysis.features.map((f, j) => (f.column === col ? j : -1)).filter((j) => j >= 0);
      const F1 = idx.length;
      const X1 = new Float64Array(trainRows.length * F1);
      for (let i = 0; i < trainRows.length; i++) idx.forEach((f, j) => (X1[i * F1 + j] = tr.X[i * p.F + f]));
      const Xt = new Float64Array(testRows.length * F1);
      for (let i = 0; i < testRows.length; i++) idx.forEach((f, j) => (Xt[i * F1 + j] = te.X[i * p.F + f]));
      const cat1 = Int32Array.from(idx, (f) => p.categorical[f]);
      const quick: EngineConfig = { ...cfg, learningRate: 0.2, maxRounds: 200, earlyStoppingRounds: 10, subsample: 1, colsample: 1 };
      const c1 = fitCore({ X: X1, n: trainRows.length, F: F1, categorical: cat1, y: tr.y, task: p.task, nClasses: p.nClasses }, quick, seed + 2);
      const o1 = rawToOutput(p.task, predictRaw(c1.predictor, Xt, testRows.length), testRows.length, p.nClasses);
      const g = goodness(p.task, te.y, o1, p.nClasses);
      if (g > bestScore) {
        bestScore = g;
        bestCol = col;
      }
    }
    if (bestCol !== null && bestScore >= LEAK_LEVEL) {
      const what = p.task === 'binary' ? `ROC AUC ${bestScore.toFixed(3)}` : p.task === 'multiclass' ? `accuracy ${bestScore.toFixed(3)}` : `R² ${bestScore.toFixed(3)}`;
      return {
        verdict: {
          level: 'weak',
          column: bestCol,
          message: `Suspiciously good: column "${bestCol}" alone almost determines "${target}" (${what} on its own); it is probably filled in after the event.`,
        },
        metrics,
        hint: `Remove column "${bestCol}" if it is only known after "${target}" is decided, then validate again.`,
      };
    }
  }
  if (!significant) {
    return {
      verdict: {
        level: 'no_signal',
        message: `The columns carry no usable signal for "${target}": on ${testRows.length} held-out rows the model does no better than always answering the ${p.task === 'regression' ? 'mean' : 'majority class'}.`,
      },
      metrics,
      hint: `Check that "${target}" is the column you mean to predict and add columns that plausibly influence it${p.n < 500 ? ', or more rows' : ''}.`,
    };
  }
  const excluded = report.columns.filter((c) => !c.used);
  let hint: string;
  if (report.warnings.length > 0 && excluded.length > 0) hint = `Dataset is usable; note: ${report.warnings.find((w) => w.startsWith('Excluded')) ?? report.warnings[0]}`;
  else if (report.warnings.length > 0) hint = `Dataset is usable; note: ${report.warnings[0]}`;
  else if (p.n < 1000) hint = 'Dataset is usable; more rows would make the model more accurate.';
  else hint = 'Dataset is usable: nothing to fix before training.';
  return {
    verdict: {
      level: 'usable',
      message: `The model beats the lazy answer on ${testRows.length} held-out rows (${score.metric} ${score.score.toFixed(3)} vs ${score.baseline_score.toFixed(3)}).`,
    },
    metrics,
    hint,
  };
}
