/**
 * Engine 8.0.0 against 7.0.0 on the same folds (as run.ts: same folds and seed, same scores): every
 * fold trains 7.0.0 and adds the forest member to it exactly as 8.0.0's training does
 * (addForestMember), with the CPU seconds of each, the forest's weight, and wins against CatBoost's
 * recorded scores (seed 0).
 *
 *   tsx bench/tabular/forest.ts [--only a,b] [--seed 0] [--trees 60] [--fold-trees 30] [--max-rows 500] [--json FILE]
 */
import * as fs from 'fs';
import { predictRows, type TabularModel } from '../../engines/tabular/index';
import { addForestMember, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { DEFAULT_FOREST_OPTIONS } from '../../engines/tabular/forest';
import { beatsRecorded, compareScores, DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, recordedCatBoost, scorePredictions, type BenchTask } from './datasets';
import { arg } from './cli';
import { cpuSeconds, mean } from './measure';

const seed = Number(arg('seed') ?? 0);
const trees = Number(arg('trees') ?? DEFAULT_FOREST_OPTIONS.trees);
const foldTrees = Number(arg('fold-trees') ?? DEFAULT_FOREST_OPTIONS.foldTrees);
const maxRows = Number(arg('max-rows') ?? DEFAULT_FOREST_OPTIONS.maxRows);
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const catboost = seed === 0 ? recordedCatBoost() : new Map<string, number>();


const out: Array<{ name: string; task: BenchTask; v7: number; v8: number; cpu7: number; cpu8: number; weights: number[]; catboost: number | null }> = [];
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  // the member is fitted on at most maxRows rows: the benchmark trains on 4/5 of a dataset
  if (Number(entry.rows) * 0.8 > maxRows) continue;
  const d = loadDataset(DEV_DATA_DIR, entry, 5, seed);
  const s7: number[] = [];
  const s8: number[] = [];
  const weights: number[] = [];
  let cpu7 = 0;
  let cpuForest = 0;
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const task = d.task === 'regression' ? 'regression' : 'classification';
    let t0 = cpuSeconds();
    const p = prepare(train, 'target', task);
    const v7 = trainPrepared(p, { engineVersion: '7.0.0', seed });
    cpu7 += cpuSeconds() - t0;
    t0 = cpuSeconds();
    const forest = addForestMember(p, v7.core, seed, { trees, foldTrees, maxRows });
    cpuForest += cpuSeconds() - t0;
    const v8: TabularModel = { ...v7.model, engine: { ...v7.model.engine, version: '8.0.0' }, formatVersion: 3, ...(forest.part ? { forest: forest.part } : {}) };
    weights.push(forest.weight ?? 0);
    s7.push(scorePredictions(d, yTest, predictRows(v7.model, test)));
    s8.push(scorePredictions(d, yTest, predictRows(v8, test)));
  }
  const r = { name: d.name, task: d.task, v7: mean(s7), v8: mean(s8), cpu7, cpu8: cpu7 + cpuForest, weights, catboost: catboost.get(d.name) ?? null };
  out.push(r);
  const digits = d.task === 'regression' ? 3 : 4;
  const vs = r.catboost === null ? '' : ` | CatBoost ${r.catboost}: ${beatsRecorded(d.task, r.v7, r.catboost) ? 'win' : 'loss'} -> ${beatsRecorded(d.task, r.v8, r.catboost) ? 'win' : 'loss'}`;
  const c = compareScores(d.task, r.v7, r.v8);
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} 7.0.0 ${r.v7.toFixed(digits)}  8.0.0 ${r.v8.toFixed(digits)} ${c > 0 ? 'better' : c < 0 ? 'worse' : 'same'} | weights ${weights.map((w) => w.toFixed(2)).join(' ')} | CPU s ${cpu7.toFixed(2)} + ${cpuForest.toFixed(2)}${vs}`);
}
const c = out.map((r) => compareScores(r.task, r.v7, r.v8));
console.log(`8.0.0 against 7.0.0: better on ${c.filter((x) => x > 0).length}, worse on ${c.filter((x) => x < 0).length} of ${out.length}`);
console.log(`CPU s, summed: 7.0.0 ${out.reduce((s, r) => s + r.cpu7, 0).toFixed(1)}, 8.0.0 ${out.reduce((s, r) => s + r.cpu8, 0).toFixed(1)}`);
const withCatBoost = out.filter((r) => r.catboost !== null);
if (withCatBoost.length > 0) {
  const wins = (k: 'v7' | 'v8'): number => withCatBoost.filter((r) => beatsRecorded(r.task, r[k], r.catboost as number)).length;
  console.log(`wins against CatBoost's recorded scores (of ${withCatBoost.length}): 7.0.0 ${wins('v7')}, 8.0.0 ${wins('v8')}`);
}
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ seed, trees, foldTrees, maxRows, datasets: out }, null, 2));
