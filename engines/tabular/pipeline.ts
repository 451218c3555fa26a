/**
 * From rows to a trained model: analysis, encoding, core training, validation score, explanations.
 */
import { gainImportance, permutationImportance, toShares, type Factor } from './explain';
import type { TabularModel } from './model';
import { analyse, encodeRows, type Analysis, type DataReport, type Row, type TaskOption } from './schema';
import { defaultConfig, fitCore, rawToOutput, type CoreResult, type EngineConfig, type EngineConfigOverride, type InternalTask } from './train';
import { logLoss, rmse, rocAuc } from './metrics';

export const ENGINE_ID = 'tabular-gbdt';
export const ENGINE_VERSION = '1.0.0';

export interface Prepared {
  analysis: Analysis;
  X: Float64Array;
  n: number;
  F: number;
  categorical: Int32Array;
  y: Float64Array;
  task: InternalTask;
  nClasses: number;
}

export function prepare(rows: Row[], target: string, task?: TaskOption): Prepared {
  const analysis = analyse(rows, target, task);
  const F = analysis.features.length;
  const n = analysis.target.keep.length;
  const X = encodeRows(rows, analysis.columns, F, analysis.target.keep);
  const categorical = Int32Array.from(analysis.features, (f) => (f.kind === 'categorical' ? Math.max(1, f.numCategories) : 0));
  return {
    analysis,
    X,
    n,
    F,
    categorical,
    y: analysis.target.y,
    task: analysis.target.task,
    nClasses: analysis.target.classes ? analysis.target.classes.length : 0,
  };
}

export interface ValidationScore {
  metric: 'roc_auc' | 'log_loss' | 'rmse';
  score: number;
  higher_is_better: boolean;
  baseline_score: number;
}

/** Metric of probabilities/values `out` against y, and the lazy answer's score. */
export function scoreOutputs(task: InternalTask, y: Float64Array, out: Float64Array, nClasses: number, lazyFrom?: Float64Array): ValidationScore {
  const ref = lazyFrom ?? y;
  if (task === 'binary') {
    const p1 = Float64Array.from({ length: y.length }, (_, i) => out[i * 2 + 1]);
    return { metric: 'roc_auc', score: rocAuc(y, p1), higher_is_better: true, baseline_score: 0.5 };
  }
  if (task === 'multiclass') {
    const prior = new Float64Array(nClasses);
    for (let i = 0; i < ref.length; i++) prior[ref[i]] += 1 / ref.length;
    const lazy = new Float64Array(y.length * nClasses);
    for (let i = 0; i < y.length; i++) lazy.set(prior, i * nClasses);
    return { metric: 'log_loss', score: logLoss(y, out, nClasses), higher_is_better: false, baseline_score: logLoss(y, lazy, nClasses) };
  }
  let mean = 0;
  for (let i = 0; i < ref.length; i++) mean += ref[i] / ref.length;
  return { metric: 'rmse', score: rmse(y, out), higher_is_better: false, baseline_score: rmse(y, new Float64Array(y.length).fill(mean)) };
}

export interface TrainResult {
  model: TabularModel;
  report: DataReport;
  validation: ValidationScore;
  topFactors?: Factor[];
  core: CoreResult;
}

export interface TrainSettings {
  explain?: boolean;
  seed?: number;
  config?: EngineConfigOverride;
  onProgress?: (p: { done: number; total: number }) => void;
}

export function resolveConfig(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const base = defaultConfig(p.n, p.task, p.nClasses);
  if (!override) return base;
  return { ...base, ...override, grower: { ...base.grower, ...(override.grower ?? {}) } };
}

export function trainPrepared(p: Prepared, settings: TrainSettings): TrainResult {
  const seed = settings.seed ?? 42;
  const cfg = resolveConfig(p, settings.config);
  const onRound = settings.onProgress
    ? (done: number, total: number) => settings.onProgress?.({ done, total })
    : undefined;
  const core = fitCore({ X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses }, cfg, seed, onRound);
  const a = p.analysis;
  const model: TabularModel = {
    engine: { id: ENGINE_ID, version: ENGINE_VERSION },
    formatVersion: 1,
    task: p.task,
    target: a.report.target,
    classes: a.target.classes,
    inputColumns: a.columns.map((c) => c.name),
    columns: a.columns,
    features: a.features,
    predictor: core.predictor,
  };
  // validation on out-of-fold rows
  const K = p.task === 'multiclass' ? p.nClasses : 1;
  const rowsHeld: number[] = [];
  for (let i = 0; i < p.n; i++) if (!Number.isNaN(core.oofRaw[i * K])) rowsHeld.push(i);
  const rawHeld = new Float64Array(rowsHeld.length * K);
  rowsHeld.forEach((r, j) => {
    for (let k = 0; k < K; k++) rawHeld[j * K + k] = core.oofRaw[r * K + k];
  });
  const yHeld = Float64Array.from(rowsHeld, (r) => p.y[r]);
  const validation = scoreOutputs(p.task, yHeld, rawToOutput(p.task, rawHeld, rowsHeld.length, p.nClasses), p.nClasses, p.y);
  let topFactors: Factor[] | undefined;
  if (settings.explain) {
    const imp = permutationImportance(p.X, p.F, p.y, p.task, p.nClasses, core.foldModels, a.features, seed + 7);
    topFactors = toShares(imp);
    if (topFactors.length === 0) topFactors = toShares(gainImportance(core.predictor, a.features));
  }
  return { model, report: a.report, validation, topFactors, core };
}
