/**
 * Engine 8.0.0 or 9.0.0 against 7.0.0 on the same folds (as run.ts: same folds and seed, same scores):
 * every fold trains 7.0.0 and adds the forest member to it exactly as 8.0.0's or 9.0.0's training does
 * (addForestMember), with the CPU seconds of each, the forest's weight, and wins against CatBoost's
 * recorded scores (seed 0).
 *
 *   tsx bench/tabular/forest.ts [--only a,b] [--seed 0] [--forest-version 8.0.0|9.0.0]
 *     [--trees T] [--fold-trees U] [--max-rows R] [--binary-weight-by log_loss|roc_auc] [--json FILE]
 *
 * The version's forest (forestOptions) unless options say otherwise.
 */
import * as fs from 'fs';
import { predictRows, type TabularModel } from '../../engines/tabular/index';
import { addForestMember, categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { DEFAULT_FOREST_OPTIONS, type ForestOptions, type ForestVersion } from '../../engines/tabular/forest';
import { beatsRecorded, compareScores, DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, recordedCatBoost, scorePredictions, type BenchTask } from './datasets';
import { arg } from './cli';
import { cpuSeconds, mean } from './measure';

const seed = Number(arg('seed') ?? 0);
const version = (arg('forest-version') ?? '8.0.0') as ForestVersion;
// options given on the command line override the version's (forestOptions)
const override: Partial<ForestOptions> = {
  ...(arg('trees') ? { trees: Number(arg('trees')) } : {}),
  ...(arg('fold-trees') ? { foldTrees: Number(arg('fold-trees')) } : {}),
  ...(arg('max-rows') ? { maxRows: Number(arg('max-rows')) } : {}),
  ...(arg('binary-weight-by') ? { binaryWeightBy: arg('binary-weight-by') as ForestOptions['binaryWeightBy'] } : {}),
};
const maxRows = override.maxRows ?? DEFAULT_FOREST_OPTIONS.maxRows;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const catboost = seed === 0 ? recordedCatBoost() : new Map<string, number>();


const out: Array<{ name: string; task: BenchTask; v7: number; withForest: number; cpu7: number; cpuWithForest: number; weights: number[]; catboost: number | null }> = [];
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  // the member is fitted on at most maxRows rows: the benchmark trains on 4/5 of a dataset
  if (Number(entry.rows) * 0.8 > maxRows) continue;
  const d = loadDataset(DEV_DATA_DIR, entry, 5, seed);
  const s7: number[] = [];
  const sForest: number[] = [];
  const weights: number[] = [];
  let cpu7 = 0;
  let cpuForest = 0;
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const task = d.task === 'regression' ? 'regression' : 'classification';
    let t0 = cpuSeconds();
    const p = prepare(train, 'target', task, categoryRuleFor('7.0.0'));
    const v7 = trainPrepared(p, { engineVersion: '7.0.0', seed });
    cpu7 += cpuSeconds() - t0;
    t0 = cpuSeconds();
    const forest = addForestMember(p, v7.core, seed, override, version);
    cpuForest += cpuSeconds() - t0;
    const withForest: TabularModel = { ...v7.model, engine: { ...v7.model.engine, version }, formatVersion: 3, ...(forest.part ? { forest: forest.part } : {}) };
    weights.push(forest.weight ?? 0);
    s7.push(scorePredictions(d, yTest, predictRows(v7.model, test)));
    sForest.push(scorePredictions(d, yTest, predictRows(withForest, test)));
  }
  const r = { name: d.name, task: d.task, v7: mean(s7), withForest: mean(sForest), cpu7, cpuWithForest: cpu7 + cpuForest, weights, catboost: catboost.get(d.name) ?? null };
  out.push(r);
  const digits = d.task === 'regression' ? 3 : 4;
  const vs = r.catboost === null ? '' : ` | CatBoost ${r.catboost}: ${beatsRecorded(d.task, r.v7, r.catboost) ? 'win' : 'loss'} -> ${beatsRecorded(d.task, r.withForest, r.catboost) ? 'win' : 'loss'}`;
  const c = compareScores(d.task, r.v7, r.withForest);
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} 7.0.0 ${r.v7.toFixed(digits)}  ${version} ${r.withForest.toFixed(digits)} ${c > 0 ? 'better' : c < 0 ? 'worse' : 'same'} | weights ${weights.map((w) => w.toFixed(2)).join(' ')} | CPU s ${cpu7.toFixed(2)} + ${cpuForest.toFixed(2)}${vs}`);
}
const c = out.map((r) => compareScores(r.task, r.v7, r.withForest));
console.log(`${version} against 7.0.0: better on ${c.filter((x) => x > 0).length}, worse on ${c.filter((x) => x < 0).length} of ${out.length}`);
console.log(`CPU s, summed: 7.0.0 ${out.reduce((s, r) => s + r.cpu7, 0).toFixed(1)}, ${version} ${out.reduce((s, r) => s + r.cpuWithForest, 0).toFixed(1)}`);
const withCatBoost = out.filter((r) => r.catboost !== null);
if (withCatBoost.length > 0) {
  const wins = (k: 'v7' | 'withForest'): number => withCatBoost.filter((r) => beatsRecorded(r.task, r[k], r.catboost as number)).length;
  console.log(`wins against CatBoost's recorded scores (of ${withCatBoost.length}): 7.0.0 ${wins('v7')}, ${version} ${wins('withForest')}`);
}
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ seed, version, override, datasets: out }, null, 2));
