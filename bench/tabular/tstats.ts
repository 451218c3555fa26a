/**
 * Experiment: out-of-fold target statistics for categorical columns, added as numeric columns before
 * the engine sees the rows (binary and regression only). Within each benchmark fold, a training row's
 * statistic comes from the other internal folds' rows of its category (so never from its own target),
 * a test row's from all training rows; smoothed towards the training mean with weight `--smooth`.
 * Trains engine 7.0.0 (the default when this was measured, bench/RESULTS.md, engine 8.0.0) on the plain
 * rows and on the augmented rows, same folds, with each one's CPU seconds.
 *
 * `--min-categories N` adds them only to columns with more than N distinct values in the training rows
 * (engines up to 9.0.0 give a column at most 64 codes, so above 63 categories the rest share "other";
 * 10.0.0 keeps more, schema.ts). `--engine-version` trains another version than 7.0.0, `--data` reads
 * another collection (the held-out one, bench/tabular/heldout.py).
 *
 *   tsx bench/tabular/tstats.ts [--only a,b] [--smooth 1] [--inner 5] [--seed 0] [--counts] [--min-categories 0]
 *                               [--engine-version 7.0.0] [--data DIR]
 */
import { predictRows, type EngineVersion, type TabularModel } from '../../engines/tabular/index';
import { analyse } from '../../engines/tabular/schema';
import { makeFolds } from '../../engines/tabular/train';
import { categoryRuleFor, trainPrepared, prepare } from '../../engines/tabular/pipeline';
import type { BenchRow } from './csv';
import { beatsRecorded, compareScores, DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, recordedCatBoost, scorePredictions } from './datasets';
import { arg } from './cli';
import { cpuSeconds, mean } from './measure';

const seed = Number(arg('seed') ?? 0);
const smooth = Number(arg('smooth') ?? 1);
const inner = Number(arg('inner') ?? 5);
const withCounts = process.argv.includes('--counts');
const minCategories = Number(arg('min-categories') ?? 0);
const engineVersion = (arg('engine-version') ?? '7.0.0') as EngineVersion;
const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const catboost = recordedCatBoost();

const keyOf = (v: unknown): string => (v === null || v === undefined || v === '' ? '\u0000missing' : String(v));

function augment(train: BenchRow[], test: BenchRow[], yTrain: number[], categorical: string[]): { train: BenchRow[]; test: BenchRow[] } {
  const prior = mean(yTrain);
  const folds = makeFolds(yTrain, inner, seed + 17, 0);
  const trainOut = train.map((r) => ({ ...r }));
  const testOut = test.map((r) => ({ ...r }));
  for (const c of categorical) {
    const all = new Map<string, [number, number]>();
    const perFold = Array.from({ length: inner }, () => new Map<string, [number, number]>());
    train.forEach((r, i) => {
      const k = keyOf(r[c]);
      const a = all.get(k) ?? [0, 0];
      a[0] += yTrain[i];
      a[1] += 1;
      all.set(k, a);
      const m = perFold[folds[i]]!;
      const b = m.get(k) ?? [0, 0];
      b[0] += yTrain[i];
      b[1] += 1;
      m.set(k, b);
    });
    const stat = (sum: number, count: number): number => (sum + smooth * prior) / (count + smooth);
    train.forEach((r, i) => {
      const k = keyOf(r[c]);
      const a = all.get(k)!;
      const b = perFold[folds[i]]!.get(k)!;
      trainOut[i]![`${c}__ts`] = stat(a[0] - b[0], a[1] - b[1]);
      if (withCounts) trainOut[i]![`${c}__n`] = a[1];
    });
    test.forEach((r, i) => {
      const a = all.get(keyOf(r[c])) ?? [0, 0];
      testOut[i]![`${c}__ts`] = stat(a[0], a[1]);
      if (withCounts) testOut[i]![`${c}__n`] = a[1];
    });
  }
  return { train: trainOut, test: testOut };
}

const rows: Array<{ name: string; plain: number; ts: number; cpuPlain: number; cpuTs: number; cat: number | undefined }> = [];
for (const entry of manifestEntries(dataDir, only)) {
  if (entry.task === 'multiclass' || entry.has_categorical !== 'yes') continue;
  const d = loadDataset(dataDir, entry, 5, seed);
  const task = d.task === 'regression' ? 'regression' : 'classification';
  const plain: number[] = [];
  const ts: number[] = [];
  let cpuPlain = 0;
  let cpuTs = 0;
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const yTrain = d.y.filter((_, i) => d.folds[i] !== f);
    const categorical = analyse(train, 'target', task, categoryRuleFor(engineVersion)).columns.filter((c) => c.used && c.type === 'categorical')
      .map((c) => c.name)
      .filter((c) => new Set(train.map((r) => keyOf(r[c]))).size > minCategories);
    let t0 = cpuSeconds();
    const m0: TabularModel = trainPrepared(prepare(train, 'target', task, categoryRuleFor(engineVersion)), { engineVersion, seed }).model;
    cpuPlain += cpuSeconds() - t0;
    plain.push(scorePredictions(d, yTest, predictRows(m0, test)));
    t0 = cpuSeconds();
    const aug = augment(train, test, yTrain, categorical);
    const m1 = trainPrepared(prepare(aug.train, 'target', task, categoryRuleFor(engineVersion)), { engineVersion, seed }).model;
    cpuTs += cpuSeconds() - t0;
    ts.push(scorePredictions(d, yTest, predictRows(m1, aug.test)));
  }
  const r = { name: d.name, plain: mean(plain), ts: mean(ts), cpuPlain, cpuTs, cat: catboost.get(d.name) };
  rows.push(r);
  const digits = d.task === 'regression' ? 3 : 4;
  const c = compareScores(d.task, r.plain, r.ts);
  const vsCat = r.cat === undefined ? '' : ` | CatBoost ${r.cat} plain ${beatsRecorded(d.task, r.plain, r.cat) ? 'win' : 'loss'} ts ${beatsRecorded(d.task, r.ts, r.cat) ? 'win' : 'loss'}`;
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} plain ${r.plain.toFixed(digits)} ts ${r.ts.toFixed(digits)} ${c === 0 ? 'same' : c > 0 ? 'BETTER' : 'worse'} | CPU ${cpuPlain.toFixed(2)} / ${cpuTs.toFixed(2)}${vsCat}`);
}
