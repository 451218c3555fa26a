/**
 * Engine 6's linear member measured against 5.0.0 in one run: on the benchmark's folds (as run.ts and
 * paired.ts: same folds and seed, same scores), every fold trains 5.0.0 once (engine 6's trees are
 * 5.0.0's, same seed), then adds the linear member exactly as trainPrepared does for 6.0.0
 * (addLinearMember), and scores both models on the fold's test rows. CPU seconds (user + system) of
 * the trees and of the linear member are reported apart, so the member's extra cost is exact under
 * any load. CatBoost's recorded scores are read from the 5.0.0 table of bench/RESULTS.md.
 *
 *   tsx bench/tabular/linear.ts [--only a,b] [--folds 5] [--seed 0] [--linear JSON] [--json FILE]
 *
 * `--linear '{"hinges":3}'`: options of the member (LinearOptions, engines/tabular/linear.ts).
 */
import * as fs from 'fs';
import { predictRows, type TabularModel } from '../../engines/tabular/index';
import { addLinearMember, categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import type { LinearOptions } from '../../engines/tabular/linear';
import { beatsRecorded, DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, recordedCatBoost, scorePredictions } from './datasets';
import { arg } from './cli';
import { mean } from './measure';

const nFolds = Number(arg('folds') ?? 5);
const seed = Number(arg('seed') ?? 0);
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const linearOpts = arg('linear') ? (JSON.parse(arg('linear') as string) as Partial<LinearOptions>) : undefined;

const catboost = recordedCatBoost();

const out: unknown[] = [];
let sumTrees = 0;
let sumLinear = 0;
let better = 0;
let worse = 0;
let wins5 = 0;
let wins6 = 0;
let nCat = 0;
const auc5: number[] = [];
const auc6: number[] = [];
const aucCb: number[] = [];
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  const d = loadDataset(DEV_DATA_DIR, entry, nFolds, seed);
  const task = d.task;
  const s5: number[] = [];
  const s6: number[] = [];
  const weights: string[] = [];
  let tTrees = 0;
  let tLinear = 0;
  for (let f = 0; f < nFolds; f++) {
    const { train: tr, test: te, yTest: yt } = foldSplit(d, f);
    const scoreOf = (model: TabularModel): number => scorePredictions(d, yt, predictRows(model, te));
    const t0 = process.cpuUsage();
    const p = prepare(tr, 'target', task === 'regression' ? 'regression' : 'classification', categoryRuleFor('5.0.0'));
    const r5 = trainPrepared(p, { engineVersion: '5.0.0', seed });
    const t1 = process.cpuUsage(t0);
    const lin = addLinearMember(p, r5.core, linearOpts);
    const t2 = process.cpuUsage(t0);
    tTrees += (t1.user + t1.system) / 1e6;
    tLinear += (t2.user + t2.system - t1.user - t1.system) / 1e6;
    const m6: TabularModel = { ...r5.model, engine: { ...r5.model.engine, version: '6.0.0' }, ...(lin.part ? { linear: lin.part, formatVersion: 2 } : {}) };
    s5.push(scoreOf(r5.model));
    s6.push(scoreOf(m6));
    weights.push(lin.weights ? `${lin.weights[1].toFixed(2)}@${lin.alpha}` : '-');
  }
  sumTrees += tTrees;
  sumLinear += tLinear;
  const a = mean(s5);
  const b = mean(s6);
  const hib = task === 'binary';
  const cmp = a === b ? 'same' : (hib ? b > a : b < a) ? 'better' : 'worse';
  if (cmp === 'better') better++;
  if (cmp === 'worse') worse++;
  const cb = catboost.get(entry.name);
  let cbText = '-';
  if (cb !== undefined) {
    nCat++;
    const w5 = beatsRecorded(task, a, cb);
    const w6 = beatsRecorded(task, b, cb);
    if (w5) wins5++;
    if (w6) wins6++;
    cbText = `cb ${cb} ${w5 ? 'W' : 'L'}->${w6 ? 'W' : 'L'}`;
    if (hib) {
      auc5.push(a);
      auc6.push(b);
      aucCb.push(cb);
    }
  }
  console.log(`${entry.name.padEnd(20)} ${task.padEnd(10)} 5.0.0 ${a.toFixed(4)} 6.0.0 ${b.toFixed(4)} ${cmp.padEnd(6)} ${cbText.padEnd(22)} | trees ${tTrees.toFixed(2)} s linear ${tLinear.toFixed(2)} s | w ${weights.join(' ')}`);
  out.push({ name: entry.name, task, v5: a, v6: b, catboost: cb ?? null, trees_s: tTrees, linear_s: tLinear, weights });
}
console.log(`better ${better} / worse ${worse} vs 5.0.0; CatBoost wins ${wins5} -> ${wins6} of ${nCat}; mean binary AUC 5.0.0 ${mean(auc5).toFixed(4)} 6.0.0 ${mean(auc6).toFixed(4)} CatBoost ${mean(aucCb).toFixed(4)} (${auc5.length} sets)`);
console.log(`CPU: trees ${sumTrees.toFixed(1)} s, linear member ${sumLinear.toFixed(2)} s (+${((100 * sumLinear) / sumTrees).toFixed(1)}%)`);
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ linear: linearOpts ?? null, folds: nFolds, seed, datasets: out, trees_s: sumTrees, linear_s: sumLinear }, null, 2));
