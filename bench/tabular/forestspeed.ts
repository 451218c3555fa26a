/**
 * Scoring speed of the forest member alone: a model trained (default engine, seed 0) on the first
 * `--rows` rows of each dataset, its forest scored on the encoded next rows (at most `--score`, never
 * repeated: a tiled batch lets the branch predictor learn its walks), CPU seconds, medians of
 * `--passes` runs alternated in one process; every walk must agree with the first bit for bit.
 * Prints rows per second per forest and per 100 trees.
 * - predictForest: the row-by-row walk the engine used before 2026-11-29 (every tree for one row, then
 *   the next row), predictForestWalk (the JavaScript walk of blocks of rows, tree by tree) and the
 *   engine's predictForest (the WebAssembly kernel for batches of WASM_MIN_ROWS rows or more);
 * - outOfBagOutputs: the row-by-row walk before, and the engine's;
 * - one row: microseconds per predictForest call of one row (the JavaScript walk) and per call of the
 *   kernel given one row, over the scored rows in turn.
 *
 *   tsx bench/tabular/forestspeed.ts [--only adult,bank_marketing,phoneme] [--rows 3000] [--score 50000] [--passes 7]
 */
import * as path from 'path';
import { trainTabular, type Row } from '../../engines/tabular/index';
import { encodeForModel } from '../../engines/tabular/model';
import { outOfBagOutputs, predictForest, predictForestWalk, type Forest } from '../../engines/tabular/forest';
import { predictForestWasm } from '../../engines/tabular/forest-wasm';
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
  const sets: Array<{ name: string; walks: Array<[string, () => Float64Array]> }> = [
    {
      name: 'predictForest',
      walks: [
        ['row by row', () => predictForestRowByRow(forest, X, nScore, F)],
        ['blocks (JS)', () => predictForestWalk(forest, X, nScore, F)],
        ['engine', () => predictForest(forest, X, nScore, F)],
      ],
    },
    {
      name: 'outOfBagOutputs',
      walks: [
        ['row by row', () => outOfBagRowByRow(forest, X, nScore, F, all, bags)],
        ['engine', () => outOfBagOutputs(forest, X, nScore, F, all, bags)],
      ],
    },
  ];
  console.log(`${entry.name}: ${T} trees, ${forest.feature.length} nodes (${Math.round(forest.feature.length / T)} per tree), ${nScore} rows scored`);
  for (const set of sets) {
    const first = set.walks[0][1]();
    const same = set.walks.map(([, walk]) => {
      const b = walk();
      let ok = first.length === b.length;
      for (let j = 0; ok && j < b.length; j++) ok = Object.is(first[j], b[j]);
      return ok;
    });
    const rates = set.walks.map(() => [] as number[]);
    for (let pass = 0; pass < passes; pass++) {
      for (let w = 0; w < set.walks.length; w++) {
        const v = (w + pass) % set.walks.length;
        const t0 = cpuSeconds();
        set.walks[v][1]();
        rates[v].push(nScore / (cpuSeconds() - t0));
      }
    }
    const med = rates.map(median);
    const cells = set.walks.map(([name], w) => `${name} ${Math.round(med[w])} (${Math.round((med[w] * T) / 100)} per 100 trees)${w > 0 ? `, ×${(med[w] / med[0]).toFixed(2)}` : ''}`);
    console.log(`  ${set.name}: ${cells.join('; ')}; bit-identical: ${same.every(Boolean)}`);
  }
  // one row at a time: each call a new row of the batch
  const oneRow: Array<[string, (i: number) => Float64Array | null]> = [
    ['predictForest', (i) => predictForest(forest, X.subarray(i * F, (i + 1) * F), 1, F)],
    ['kernel', (i) => predictForestWasm(forest, X.subarray(i * F, (i + 1) * F), 1, F)],
  ];
  const calls = Math.min(nScore, 2000);
  const micros = oneRow.map(() => [] as number[]);
  for (let pass = 0; pass < passes; pass++) {
    for (let w = 0; w < oneRow.length; w++) {
      const v = (w + pass) % oneRow.length;
      const t0 = cpuSeconds();
      for (let i = 0; i < calls; i++) oneRow[v][1](i);
      micros[v].push(((cpuSeconds() - t0) / calls) * 1e6);
    }
  }
  console.log(`  one row: ${oneRow.map(([name], w) => `${name} ${median(micros[w]).toFixed(1)} µs`).join('; ')}`);
}
