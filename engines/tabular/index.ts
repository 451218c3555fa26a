/**
 * Tabular prediction engine (gradient-boosted trees on histograms). Pure TypeScript, no I/O.
 *
 * Parts (as scikit-learn's HistGradientBoosting): schema.ts (input handling), binning.ts,
 * loss.ts (one class per objective), grower.ts (leaf-wise tree grower, loss-agnostic),
 * predictor.ts (flat typed-array predictor for inference and serialisation), gbdt.ts (boosting
 * loop with callbacks), train.ts (internal folds and averaging), explain.ts (permutation
 * importance), trial.ts (dataset validation), serialise.ts (artefact).
 */
import { TabularDataError, TabularModelFormatError } from './errors';
import { predictModelRows, type Prediction, type TabularModel } from './model';
import { categoryRuleFor, prepare, trainPrepared, ENGINE_ID, ENGINE_VERSION, ENGINE_VERSIONS, type EngineVersion, type ValidationScore } from './pipeline';
import { analyse, type DataReport, type Row, type TaskOption } from './schema';
import { deserialise, serialise, ARTEFACT_FORMAT_VERSION } from './serialise';
import { trialRun as runTrial, type TrialReport } from './trial';
import type { EngineConfig, EngineConfigOverride } from './train';

export const TABULAR_ENGINE = {
  id: ENGINE_ID,
  version: ENGINE_VERSION,
  /** Versions whose models this build serves, unchanged: every version it has ever trained. */
  servableVersions: ENGINE_VERSIONS,
  tasks: ['binary', 'multiclass', 'regression'] as const,
  creditPricePerRow: 1,
  artefactFormatVersion: ARTEFACT_FORMAT_VERSION,
};

export type { EngineVersion };
export type { Row, DataReport, TabularModel, Prediction, TrialReport, EngineConfig, EngineConfigOverride, TaskOption };
export type { ColumnReport, ColumnType, Task, ClassLabel } from './schema';
export { TabularDataError, TabularModelFormatError };
export { classLabelReader, MAX_TARGET_MAGNITUDE, toNumber } from './schema';

export interface TrainOptions {
  target: string;
  task?: TaskOption;
  explain?: boolean;
  seed?: number;
  /** The engine version to train; default the current one (TABULAR_ENGINE.version). */
  engineVersion?: EngineVersion;
  onProgress?: (p: { done: number; total: number }) => void;
  /** Advanced: overrides of the engine configuration (benchmarks, tests). */
  config?: EngineConfigOverride;
}

export interface TrainedTabular {
  model: TabularModel;
  report: DataReport;
  validation: ValidationScore;
  topFactors?: Array<{ feature: string; importance: number }>;
}

/**
 * Trains a model. `validation` is measured on out-of-fold rows of the internal folds (each row is
 * scored by the model that did not see it). Throws TabularDataError when the data cannot be used.
 */
export function trainTabular(rows: Row[], options: TrainOptions): TrainedTabular {
  const p = prepare(rows, options.target, options.task, categoryRuleFor(options.engineVersion ?? ENGINE_VERSION, options.config?.categories));
  const r = trainPrepared(p, { engineVersion: options.engineVersion, explain: options.explain, seed: options.seed, config: options.config, onProgress: options.onProgress });
  const out: TrainedTabular = { model: r.model, report: r.report, validation: r.validation };
  if (options.explain) out.topFactors = r.topFactors ?? [];
  return out;
}

/** Serialises a model to a JSON string (format version inside; typed arrays as little-endian base64). */
export function serialiseModel(model: TabularModel): string {
  return serialise(model);
}

/** Reloads a serialised model; throws TabularModelFormatError if the format or version is unknown. */
export function loadModel(serialised: string): TabularModel {
  return deserialise(serialised);
}

/** Scores rows; probabilities are keyed by the class label as a string. */
export function predictRows(model: TabularModel, rows: Row[]): Prediction[] {
  return predictModelRows(model, rows);
}

/** Columns expected at prediction time: training columns minus the target, in training order (excluded ones included). */
export function featureColumns(model: TabularModel): string[] {
  return [...model.inputColumns];
}

/** Data report without training; throws TabularDataError when the data cannot be used. */
export function analyseDataset(rows: Row[], options: { target: string; task?: TaskOption }): DataReport {
  return analyse(rows, options.target, options.task, categoryRuleFor(ENGINE_VERSION)).report;
}

/** Trial fit on a random split, with a verdict (usable / weak / no_signal) and a hint. */
export function trialRun(rows: Row[], options: { target: string; task?: TaskOption; seed?: number }): TrialReport {
  return runTrial(rows, options);
}
