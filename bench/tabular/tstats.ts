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
 * CatBoost's ordered statistics instead (`--ordered`): a training row's from the training rows before it
 * in a random permutation, averaged over `--perms` permutations; `--pairs` adds every pair of
 * categorical columns as a key of its own, `--combo a+b+c,d+e` named combinations, `--pairs-only`
 * leaves the single columns' statistics out, `--replace` drops the categorical columns themselves
 * (bench/RESULTS.md, thirteenth round of issue 15).
 *
 *   tsx bench/tabular/tstats.ts [--only a,b] [--smooth 1] [--inner 5] [--seed 0] [--counts] [--min-categories 0]
 *                               [--engine-version 7.0.0] [--data DIR] [--ordered] [--perms 1] [--pairs]
 *                               [--combo a+b,c+d] [--pairs-only] [--replace]
 */
import { predictRows, type EngineVersion, type TabularModel } from '../../engines/tabular/index';
import { analyse } from '../../engines/tabular/schema';
import { makeFolds } from '../../engines/tabular/train';
import { Prng } from '../../engines/tabular/prng';
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
// ordered target statistics (CatBoost's): each training row's from the rows before it in a random
// permutation (averaged over --perms permutations), a test row's from all training rows
const ordered = process.argv.includes('--ordered');
const perms = Number(arg('perms') ?? 1);
// also every pair of categorical columns as a key of its own (its statistic only, not a column)
const pairs = process.argv.includes('--pairs');
// the categorical columns replaced by their statistics instead of kept beside them
const replace = process.argv.includes('--replace');
const onlyStats = process.argv.includes('--pairs-only');
// named combinations of columns as keys ('a+b+c,d+e'), e.g. the columns of a record's name
const combos = (arg('combo') ?? '').split(',').filter(Boolean).map((c) => c.split('+'));
const catboost = recordedCatBoost();

const keyOf = (v: unknown): string => (v === null || v === undefined || v === '' ? '\u0000missing' : String(v));

function augment(train: BenchRow[], test: BenchRow[], yTrain: number[], categorical: string[]): { train: BenchRow[]; test: BenchRow[] } {
  const prior = mean(yTrain);
  const folds = makeFolds(yTrain, inner, seed + 17, 0);
  const trainOut = train.map((r) => ({ ...r }));
  const testOut = test.map((r) => ({ ...r }));
  const keys: Array<{ name: string; key: (r: BenchRow) => string }> = [];
  if (!onlyStats) for (const c of categorical) keys.push({ name: c, key: (r) => keyOf(r[c]) });
  if (pairs) {
    for (let a = 0; a < categorical.length; a++) {
      for (let b = a + 1; b < categorical.length; b++) {
        const [ca, cb] = [categorical[a], categorical[b]];
        keys.push({ name: `${ca}*${cb}`, key: (r) => `${keyOf(r[ca])}\u0001${keyOf(r[cb])}` });
      }
    }
  }
  for (const cols of combos) keys.push({ name: cols.join('*'), key: (r) => cols.map((c) => keyOf(r[c])).join('\u0001') });
  const stat = (sum: number, count: number): number => (sum + smooth * prior) / (count + smooth);
  const orders = Array.from({ length: perms }, (_, p) => new Prng(seed + 31 + p).shuffle(Int32Array.from({ length: train.length }, (_, i) => i)));
  for (const { name, key } of keys) {
    const trainKeys = train.map(key);
    const all = new Map<string, [number, number]>();
    train.forEach((_, i) => {
      const a = all.get(trainKeys[i]) ?? [0, 0];
      a[0] += yTrain[i];
      a[1] += 1;
      all.set(trainKeys[i], a);
    });
    if (ordered) {
      const acc = new Float64Array(train.length);
      for (const order of orders) {
        const seen = new Map<string, [number, number]>();
        for (const i of order) {
          const a = seen.get(trainKeys[i]) ?? [0, 0];
          acc[i] += stat(a[0], a[1]) / perms;
          a[0] += yTrain[i];
          a[1] += 1;
          seen.set(trainKeys[i], a);
        }
      }
      train.forEach((_, i) => (trainOut[i]![`${name}__ts`] = acc[i]));
    } else {
      const perFold = Array.from({ length: inner }, () => new Map<string, [number, number]>());
      train.forEach((_, i) => {
        const m = perFold[folds[i]]!;
        const b = m.get(trainKeys[i]) ?? [0, 0];
        b[0] += yTrain[i];
        b[1] += 1;
        m.set(trainKeys[i], b);
      });
      train.forEach((_, i) => {
        const a = all.get(trainKeys[i])!;
        const b = perFold[folds[i]]!.get(trainKeys[i])!;
        trainOut[i]![`${name}__ts`] = stat(a[0] - b[0], a[1] - b[1]);
      });
    }
    if (withCounts) train.forEach((_, i) => (trainOut[i]![`${name}__n`] = all.get(trainKeys[i])![1]));
    test.forEach((r, i) => {
      const a = all.get(key(r)) ?? [0, 0];
      testOut[i]![`${name}__ts`] = stat(a[0], a[1]);
      if (withCounts) testOut[i]![`${name}__n`] = a[1];
    });
  }
  if (replace) {
    for (const r of trainOut) for (const c of categorical) delete r[c];
    for (const r of testOut) for (const c of categorical) delete r[c];
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
