/**
 * The development datasets as every tabular benchmark script reads them: the manifest, each file's
 * target encoded (values, or class indices with the classes sorted by their string form) and the
 * benchmark's folds for a seed, so that run.ts, paired.ts and linear.ts score the same splits.
 */
import * as fs from 'fs';
import * as path from 'path';
import Papa from 'papaparse';
import type { Prediction } from '../../engines/tabular/index';
import { logLoss, rmse, rocAuc } from '../../engines/tabular/metrics';
import { makeFolds } from '../../engines/tabular/train';
import { readCsv, type BenchRow } from './csv';

export type BenchTask = 'binary' | 'multiclass' | 'regression';

export interface BenchDataset {
  name: string;
  task: BenchTask;
  rows: BenchRow[];
  y: number[];
  /** class labels in index order (empty for regression) */
  classKeys: string[];
  /** the fold of every row */
  folds: number[];
}

export const DEV_DATA_DIR = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'tabular');

/** The manifest's entries (name, task, …), those named in `only` when it is given. */
export function manifestEntries(dataDir: string, only: Set<string> | null): Array<Record<string, string>> {
  const manifest = Papa.parse<Record<string, string>>(fs.readFileSync(path.join(dataDir, 'manifest.csv'), 'utf8'), { header: true, skipEmptyLines: true }).data;
  return manifest.filter((m) => !only || only.has(m.name));
}

/** One manifest entry read, its target encoded and its rows given their folds. */
export function loadDataset(dataDir: string, entry: Record<string, string>, nFolds: number, seed: number, target = 'target'): BenchDataset {
  const task = entry.task as BenchTask;
  const rows = readCsv(path.join(dataDir, `${entry.name}.csv`));
  let classKeys: string[] = [];
  let y: number[];
  if (task === 'regression') y = rows.map((r) => Number(r[target]));
  else {
    classKeys = [...new Set(rows.map((r) => String(r[target])))].sort();
    const index = new Map(classKeys.map((k, i) => [k, i]));
    y = rows.map((r) => index.get(String(r[target])) as number);
  }
  const folds = Array.from(makeFolds(y, nFolds, seed, task === 'regression' ? 0 : classKeys.length));
  return { name: entry.name, task, rows, y, classKeys, folds };
}

/** Fold f's training rows, test rows and test targets. */
export function foldSplit(d: BenchDataset, f: number): { train: BenchRow[]; test: BenchRow[]; yTest: number[] } {
  return {
    train: d.rows.filter((_, i) => d.folds[i] !== f),
    test: d.rows.filter((_, i) => d.folds[i] === f),
    yTest: d.y.filter((_, i) => d.folds[i] === f),
  };
}

/** The benchmark's score of our engine's predictions: ROC AUC (binary), log loss (multiclass), RMSE. */
export function scorePredictions(d: BenchDataset, yTest: number[], predictions: Prediction[]): number {
  if (d.task === 'binary') return rocAuc(yTest, predictions.map((q) => q.probabilities?.[d.classKeys[1]] ?? 0));
  if (d.task === 'multiclass') return logLoss(yTest, predictions.flatMap((q) => d.classKeys.map((k) => q.probabilities?.[k] ?? 0)), d.classKeys.length);
  return rmse(yTest, predictions.map((q) => q.prediction as number));
}

/**
 * CatBoost's recorded score per dataset (benchmark folds, seed 0): the CatBoost column of the 5.0.0
 * table of bench/RESULTS.md (dataset | task | 5.0.0 | 4.0.0 | CatBoost | ...), so that scripts which do
 * not run the peers can count wins against it.
 */
export function recordedCatBoost(): Map<string, number> {
  const catboost = new Map<string, number>();
  const results = fs.readFileSync(path.resolve(__dirname, '..', 'RESULTS.md'), 'utf8');
  const start = results.indexOf('| dataset | task | 5.0.0 | 4.0.0 | CatBoost');
  for (const line of results.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').map((c) => c.trim().replace(/\*/g, ''));
    const v = Number(cells[5]);
    if (Number.isFinite(v) && cells[5] !== '') catboost.set(cells[1], v);
  }
  return catboost;
}

/** 1 when score `b` is better than score `a` (higher AUC, lower log loss or RMSE), -1 when worse, 0 when equal. */
export function compareScores(task: BenchTask, a: number, b: number): number {
  return a === b ? 0 : (task === 'binary' ? b > a : b < a) ? 1 : -1;
}

/** Whether `score` beats CatBoost's recorded `catboost` at the table's precision (4 digits, 3 for RMSE). */
export function beatsRecorded(task: BenchTask, score: number, catboost: number): boolean {
  const r = Number(score.toFixed(task === 'regression' ? 3 : 4));
  return task === 'binary' ? r > catboost : r < catboost;
}
