/**
 * Engines 5.0.0, 6.0.0 and 7.0.0 on the same folds (as run.ts: same folds and seed, same scores), with
 * each version's CPU seconds (user + system), so the comparison holds under any load. Every fold trains
 * 5.0.0, adds the linear member to its trees exactly as 6.0.0's training does (addLinearMember, as
 * linear.ts; 6.0.0's CPU is 5.0.0's plus the member's), and trains 7.0.0 where its configuration differs
 * (small data, isSmallData; elsewhere 7.0.0 trains 6.0.0's model). Wins against
 * CatBoost are counted on seed 0 only, against its recorded scores (bench/RESULTS.md).
 *
 *   tsx bench/tabular/versions.ts [--only a,b] [--seed 0] [--json FILE]
 */
import * as fs from 'fs';
import { predictRows, type TabularModel } from '../../engines/tabular/index';
import { addLinearMember, categoryRuleFor, isSmallData, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { beatsRecorded, compareScores, DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, recordedCatBoost, scorePredictions, type BenchTask } from './datasets';
import { arg } from './cli';
import { cpuSeconds, mean } from './measure';

const seed = Number(arg('seed') ?? 0);
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const catboost = seed === 0 ? recordedCatBoost() : new Map<string, number>();
const VERSIONS = ['5.0.0', '6.0.0', '7.0.0'] as const;
type Version = (typeof VERSIONS)[number];
type PerVersion = Record<Version, number>;


const out: Array<{ name: string; task: BenchTask; score: PerVersion; cpu_s: PerVersion; catboost: number | null }> = [];
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  const d = loadDataset(DEV_DATA_DIR, entry, 5, seed);
  const scores: Record<Version, number[]> = { '5.0.0': [], '6.0.0': [], '7.0.0': [] };
  const cpu: PerVersion = { '5.0.0': 0, '6.0.0': 0, '7.0.0': 0 };
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const score = (model: TabularModel): number => scorePredictions(d, yTest, predictRows(model, test));
    const task = d.task === 'regression' ? 'regression' : 'classification';
    let t0 = cpuSeconds();
    const p = prepare(train, 'target', task, categoryRuleFor('5.0.0'));
    const v5 = trainPrepared(p, { engineVersion: '5.0.0', seed });
    const trees = cpuSeconds() - t0;
    t0 = cpuSeconds();
    const linear = addLinearMember(p, v5.core);
    const member = cpuSeconds() - t0;
    const v6: TabularModel = { ...v5.model, engine: { ...v5.model.engine, version: '6.0.0' }, formatVersion: 2, ...(linear.part ? { linear: linear.part } : {}) };
    let v7: TabularModel = { ...v6, engine: { ...v6.engine, version: '7.0.0' } };
    let cpu7 = trees + member;
    if (isSmallData(p)) {
      // trained from its own preparation, so that its CPU seconds count what 5.0.0's do
      t0 = cpuSeconds();
      v7 = trainPrepared(prepare(train, 'target', task, categoryRuleFor('7.0.0')), { engineVersion: '7.0.0', seed }).model;
      cpu7 = cpuSeconds() - t0;
    }
    cpu['5.0.0'] += trees;
    cpu['6.0.0'] += trees + member;
    cpu['7.0.0'] += cpu7;
    scores['5.0.0'].push(score(v5.model));
    scores['6.0.0'].push(score(v6));
    scores['7.0.0'].push(score(v7));
  }
  const score: PerVersion = { '5.0.0': mean(scores['5.0.0']), '6.0.0': mean(scores['6.0.0']), '7.0.0': mean(scores['7.0.0']) };
  out.push({ name: d.name, task: d.task, score, cpu_s: cpu, catboost: catboost.get(d.name) ?? null });
  const digits = d.task === 'regression' ? 3 : 4;
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} ${VERSIONS.map((v) => `${v} ${score[v].toFixed(digits)}`).join('  ')} | CPU s ${VERSIONS.map((v) => cpu[v].toFixed(2)).join(' / ')}`);
}
for (const [a, b] of [['5.0.0', '6.0.0'], ['5.0.0', '7.0.0'], ['6.0.0', '7.0.0']] as const) {
  const c = out.map((r) => compareScores(r.task, r.score[a], r.score[b]));
  console.log(`${b} against ${a}: better on ${c.filter((x) => x > 0).length}, worse on ${c.filter((x) => x < 0).length} of ${out.length}`);
}
console.log(`CPU s, summed: ${VERSIONS.map((v) => `${v} ${out.reduce((s, r) => s + r.cpu_s[v], 0).toFixed(1)}`).join(', ')}`);
const withCatBoost = out.filter((r) => r.catboost !== null);
if (withCatBoost.length > 0) {
  console.log(`wins against CatBoost's recorded scores (of ${withCatBoost.length}): ${VERSIONS.map((v) => `${v} ${withCatBoost.filter((r) => beatsRecorded(r.task, r.score[v], r.catboost as number)).length}`).join(', ')}`);
}
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ seed, datasets: out }, null, 2));
