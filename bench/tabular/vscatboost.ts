/**
 * Wins and mean binary ROC AUC of both variants of an abpair.ts JSON (seed 0: the benchmark's folds)
 * against CatBoost's recorded scores (datasets.ts, recordedCatBoost), as run.ts's summary counts them:
 * a win at the table's precision, the mean over the binary sets CatBoost finishes.
 *
 *   tsx bench/tabular/vscatboost.ts FILE.json
 */
import * as fs from 'fs';
import { beatsRecorded, recordedCatBoost, type BenchTask } from './datasets';

const file = process.argv[2];
const run = JSON.parse(fs.readFileSync(file, 'utf8')) as { a: string; b: string; datasets: Array<{ name: string; task: BenchTask; a: number; b: number }> };
const catboost = recordedCatBoost();
for (const side of ['a', 'b'] as const) {
  let wins = 0;
  let sets = 0;
  let ours = 0;
  let theirs = 0;
  let binary = 0;
  for (const d of run.datasets) {
    const c = catboost.get(d.name);
    if (c === undefined) continue;
    sets++;
    if (beatsRecorded(d.task, d[side], c)) wins++;
    if (d.task === 'binary') {
      binary++;
      ours += d[side];
      theirs += c;
    }
  }
  console.log(`${side.toUpperCase()} (${run[side]}): ${wins}/${sets} wins against CatBoost; mean binary ROC AUC ${(ours / binary).toFixed(4)} vs ${(theirs / binary).toFixed(4)} (${(ours / binary - theirs / binary >= 0 ? '+' : '')}${(ours / binary - theirs / binary).toFixed(4)}) over ${binary} binary sets`);
}
