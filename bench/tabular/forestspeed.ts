/**
 * Scoring speed of the forest member alone: a model trained (default engine, seed 0) on the first
 * `--rows` rows of each dataset, its forest scored on the encoded next rows (at most `--score`, never
 * repeated: a tiled batch lets the branch predictor learn its walks) by the row-by-row walks the engine
 * used before (every tree for one row, then the next row) and by the engine's predictForest and
 * outOfBagOutputs, alternated, CPU seconds; each pair must agree bit for bit. Prints rows per second
 * per forest and per 100 trees.
 *
 *   tsx bench/tabular/forestspeed.ts [--only adult,bank_marketing,phoneme] [--rows 3000] [--score 50000] [--passes 7]
 */
import * as path from 'path';
import { trainTabular, type Row } from '../../engines/tabular/index';
import { encodeForModel } from '../../engines/tabular/model';
import { outOfBagOutputs, predictForest, type Forest } from '../../engines/tabular/forest';
import { DEV_DATA_DIR, manifestEntries } from './datasets';
import { readCsv } from './csv';
import { arg } from './cli';
import { cpuSeconds } from './measure';

/** The walk predictForest used before it scored rows in blocks: every tree for one row, then the next row. */
function predictForestRowByRow(forest: Forest, X: Float64Array, n: number, F: number): Float64Array {
  const K = forest.nOutputs;
  const T = forest.treeRoot.length;
  const out = new Float64Array(n * K);
  const { feature, threshold, left, right, leafValue, treeRoot } = forest;
  for (let i = 0; i < n; i++) {
    const base = i * F;
    const o = i * K;
    for (let t = 0; t < T; t++) {
      let node = treeRoot[t];
      while (feature[node] >= 0) node = X[base + feature[node]] <= threshold[node] ? left[node] : right[node];
      const v = left[node] * K;
      for (let k = 0; k < K; k++) out[o + k] += leafValue[v + k];
    }
    for (let k = 0; k < K; k++) out[o + k] /= T;
  }
  return out;
}

/** The walk outOfBagOutputs used before it walked blocks of rows: every tree for one row, then the next row. */
function outOfBagRowByRow(forest: Forest, X: Float64Array, n: number, F: number, rows: Int32Array, bags: Uint8Array): Float64Array {
  const K = forest.nOutputs;
  const T = forest.treeRoot.length;
  const m = rows.length;
  const out = new Float64Array(n * K).fill(NaN);
  const acc = new Float64Array(K);
  const { feature, threshold, left, right, leafValue, treeRoot } = forest;
  for (let j = 0; j < m; j++) {
    const base = rows[j] * F;
    acc.fill(0);
    let count = 0;
    for (let t = 0; t < T; t++) {
      if (bags[t * m + j]) continue;
      let node = treeRoot[t];
      while (feature[node] >= 0) node = X[base + feature[node]] <= threshold[node] ? left[node] : right[node];
      const v = left[node] * K;
      for (let k = 0; k < K; k++) acc[k] += leafValue[v + k];
      count++;
    }
    if (count > 0) for (let k = 0; k < K; k++) out[rows[j] * K + k] = acc[k] / count;
  }
  return out;
}

const only = new Set((arg('only') ?? 'adult,bank_marketing,phoneme').split(','));
const nTrain = Number(arg('rows') ?? 3000);
const maxScore = Number(arg('score') ?? 50000);
const passes = Number(arg('passes') ?? 7);
const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  const rows = readCsv(path.join(DEV_DATA_DIR, `${entry.name}.csv`)) as Row[];
  // rows never repeated: a tiled batch lets the branch predictor learn its walks
  const train = rows.slice(0, Math.min(nTrain, rows.length - 1000));
  const test = rows.slice(train.length, train.length + maxScore);
  const task = entry.task === 'regression' ? ('regression' as const) : ('classification' as const);
  const model = trainTabular(train, { target: 'target', task, seed: 0 }).model;
  if (!model.forest) {
    console.log(`${entry.name}: no forest kept`);
    continue;
  }
  const forest = model.forest;
  const F = model.features.length;
  const X = encodeForModel(model, test);
  const nScore = test.length;
  const T = forest.treeRoot.length;
  // out-of-bag: every row of the batch, each tree leaving out a random half of them
  const all = Int32Array.from({ length: nScore }, (_, j) => j);
  const bags = new Uint8Array(T * nScore);
  for (let j = 0; j < bags.length; j++) bags[j] = (Math.imul(j + 1, 2654435761) >>> 31) & 1;
  const pairs: Array<{ name: string; reference: () => Float64Array; engine: () => Float64Array }> = [
    { name: 'predictForest', reference: () => predictForestRowByRow(forest, X, nScore, F), engine: () => predictForest(forest, X, nScore, F) },
    { name: 'outOfBagOutputs', reference: () => outOfBagRowByRow(forest, X, nScore, F, all, bags), engine: () => outOfBagOutputs(forest, X, nScore, F, all, bags) },
  ];
  console.log(`${entry.name}: ${T} trees, ${forest.feature.length} nodes (${Math.round(forest.feature.length / T)} per tree), ${nScore} rows scored`);
  for (const pair of pairs) {
    const a = pair.reference();
    const b = pair.engine();
    let same = a.length === b.length;
    for (let j = 0; same && j < a.length; j++) same = Object.is(a[j], b[j]);
    const rates = [[], []] as number[][];
    const fns = [pair.reference, pair.engine];
    for (let pass = 0; pass < passes; pass++) {
      for (const v of pass % 2 === 0 ? [0, 1] : [1, 0]) {
        const t0 = cpuSeconds();
        fns[v]();
        rates[v].push(nScore / (cpuSeconds() - t0));
      }
    }
    const [ref, eng] = rates.map(median);
    console.log(
      `  ${pair.name}: row by row ${Math.round(ref)} rows/s (${Math.round((ref * T) / 100)} per 100 trees), in blocks ${Math.round(eng)} (${Math.round((eng * T) / 100)}), ×${(eng / ref).toFixed(2)}, bit-identical: ${same}`,
    );
  }
}
