/**
 * The trained model (artefact content) and prediction from row objects.
 */
import { predictRawFast } from './compiled';
import type { FlatPredictor } from './predictor';
import { applyLinear, type LinearPart } from './linear';
import { mixOutputs, predictForest, type ForestPart } from './forest';
import { predictKnn, type KnnPart } from './knn';
import { mixGroup, type GroupPart } from './group';
import { encodeInto, encodeRows, type ClassLabel, type ColumnSchema, type FeatureSpec, type Row, type Task } from './schema';
import { rawToOutput } from './train';

export interface TabularModel {
  engine: { id: string; version: string };
  formatVersion: number;
  task: Task;
  target: string;
  /** classification: class labels in probability order, original types kept */
  classes: ClassLabel[] | null;
  /** columns expected at prediction time (training columns minus target, in training order) */
  inputColumns: string[];
  /** encoding of each input column (used or excluded) */
  columns: ColumnSchema[];
  /** encoded features, in predictor order */
  features: FeatureSpec[];
  predictor: FlatPredictor;
  /** engine 6 (artefact format 2): a linear member blended with the trees; absent otherwise */
  linear?: LinearPart;
  /** engines 8 and 9 (artefact format 3): a forest member mixed into the outputs; absent otherwise */
  forest?: ForestPart;
  /** engine 17 (artefact format 4, optional part): a k-nearest-neighbours member mixed into the outputs after the forest; absent otherwise */
  knn?: KnnPart;
  /** engine 11 (artefact format 4): a group member mixed into the outputs; absent otherwise */
  group?: GroupPart;
}

export interface Prediction {
  prediction: string | number | boolean;
  probabilities?: Record<string, number>;
}

/** Encodes rows with the model's schema (row-major, NaN for missing). */
export function encodeForModel(model: TabularModel, rows: Row[]): Float64Array {
  return encodeRows(rows, model.columns, model.features.length);
}

/** Model outputs for an encoded matrix: probabilities (n x C) or values (n). */
export function outputsFromMatrix(model: TabularModel, X: Float64Array, n: number): Float64Array {
  const C = model.classes ? model.classes.length : 1;
  const raw = predictRawFast(model.predictor, X, n);
  if (model.linear) applyLinear(model.linear, X, n, model.features.length, raw);
  const out = rawToOutput(model.task, raw, n, C);
  if (model.forest) mixOutputs(out, predictForest(model.forest, X, n, model.features.length), model.forest.weight);
  if (model.knn) mixOutputs(out, predictKnn(model.knn, X, n, model.features.length), model.knn.weight);
  if (model.group) mixGroup(model.group, X, n, model.features.length, out);
  return out;
}

/**
 * Large batches are encoded and scored in chunks with one reused buffer: a whole-batch matrix
 * (rows x features doubles) is tens of megabytes for 200,000 rows, and allocating it made garbage
 * collection a sixth of the prediction time.
 */
const CHUNK_ROWS = 8192;

export function predictModelRows(model: TabularModel, rows: Row[]): Prediction[] {
  if (!Array.isArray(rows)) throw new TypeError('rows must be an array of objects');
  const n = rows.length;
  const F = model.features.length;
  const result: Prediction[] = new Array(n);
  const X = new Float64Array(Math.min(n, CHUNK_ROWS) * F);
  const classes = model.classes;
  const keys = classes ? classes.map((c) => String(c)) : [];
  const C = classes ? classes.length : 1;
  // a class labelled "__proto__" is defined as an own key like any other: assigning it would set the
  // object's prototype instead (the contract's proba_<class> field went missing)
  const protoClass = keys.indexOf('__proto__');
  for (let start = 0; start < n; start += CHUNK_ROWS) {
    const m = Math.min(CHUNK_ROWS, n - start);
    encodeInto(rows, model.columns, F, X, start, m);
    const out = outputsFromMatrix(model, m === CHUNK_ROWS ? X : X.subarray(0, m * F), m);
    if (!classes) {
      for (let i = 0; i < m; i++) result[start + i] = { prediction: out[i] };
      continue;
    }
    for (let i = 0; i < m; i++) {
      let best = 0;
      const probabilities: Record<string, number> = {};
      for (let k = 0; k < C; k++) {
        const p = out[i * C + k];
        if (k === protoClass) Object.defineProperty(probabilities, '__proto__', { value: p, enumerable: true, writable: true, configurable: true });
        else probabilities[keys[k]] = p;
        if (p > out[i * C + best]) best = k;
      }
      result[start + i] = { prediction: classes[best], probabilities };
    }
  }
  return result;
}
