/**
 * Paired comparison with engine 1.0.0 under the same load: on the benchmark's folds (as run.ts: same
 * folds and seed, same scores), every fold trains the candidate and then 1.0.0 in the same process,
 * and fit times are the process's CPU seconds (user + system), not wall-clock seconds: on a shared
 * machine whose load changes by the minute, wall-clock times of niced processes mostly measure the
 * wait (the benchmark's own ratios against peers compare runs taken at different moments). The
 * candidate's ratio to LightGBM is then about this ratio × 1.0.0's (4.45× summed on an idle machine).
 *
 *   tsx bench/tabular/paired.ts [--engine-version 4.0.0] [--only a,b] [--folds 5] [--config JSON] [--json FILE]
 *     [--base-from DIR [--base-candidate]] [--seed 0]
 *
 * `--seed S`: the seed of the benchmark's folds and of training (default 0, run.ts's); another seed
 * gives a replicate on other splits, to check that a difference found with seed 0 is not its noise.
 *
 * `--base-from DIR`: 1.0.0 is trained by the engine of another checkout (DIR/engines/tabular, e.g.
 * `git archive <commit> engines | tar -x -C DIR`, with DIR/node_modules linked), so that a change that
 * speeds up both versions is measured against the 1.0.0 whose idle ratio to LightGBM is known;
 * `--base-candidate` also trains that checkout's candidate version (the "before" of the same run).
 */
import { createRequire } from 'module';
import * as fs from 'fs';
import * as path from 'path';
import { predictRows, trainTabular, type EngineConfigOverride, type EngineVersion, type TabularModel } from '../../engines/tabular/index';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries, scorePredictions } from './datasets';
import { arg } from './cli';
import { mean } from './measure';

const nFolds = Number(arg('folds') ?? 5);
const seed = Number(arg('seed') ?? 0);
const version = (arg('engine-version') ?? '4.0.0') as EngineVersion;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const config = arg('config') ? (JSON.parse(arg('config') as string) as EngineConfigOverride) : undefined;
type Engine = { trainTabular: typeof trainTabular; predictRows: typeof predictRows };
const baseFrom = arg('base-from');
const baseEngine: Engine = baseFrom ? (createRequire(__filename)(path.resolve(baseFrom, 'engines', 'tabular', 'index')) as Engine) : { trainTabular, predictRows };
const baseCandidate = baseFrom !== undefined && process.argv.includes('--base-candidate');
let sumBaseCandidate = 0;
const out: unknown[] = [];
let sumOurs = 0;
let sumBase = 0;
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  const d = loadDataset(DEV_DATA_DIR, entry, nFolds, seed);
  const task = d.task;
  const scores: number[] = [];
  const baseScores: number[] = [];
  let fitOurs = 0;
  let fitBase = 0;
  let fitBaseCandidate = 0;
  for (let f = 0; f < nFolds; f++) {
    const { train: tr, test: te, yTest: yt } = foldSplit(d, f);
    const scoreOf = (model: TabularModel, engine: Engine = { trainTabular, predictRows }): number => scorePredictions(d, yt, engine.predictRows(model, te));
    const train = (v: EngineVersion, c?: EngineConfigOverride, engine: Engine = { trainTabular, predictRows }): { model: TabularModel; s: number } => {
      const t0 = process.cpuUsage();
      const m = engine.trainTabular(tr, { target: 'target', task: task === 'regression' ? 'regression' : 'classification', seed, config: c, engineVersion: v });
      const t = process.cpuUsage(t0);
      return { model: m.model, s: (t.user + t.system) / 1e6 };
    };
    const a = train(version, config);
    fitOurs += a.s;
    scores.push(scoreOf(a.model));
    const b = train('1.0.0', undefined, baseEngine);
    fitBase += b.s;
    baseScores.push(scoreOf(b.model, baseEngine));
    if (baseCandidate) {
      const c = train(version, config, baseEngine);
      fitBaseCandidate += c.s;
      if (scoreOf(c.model, baseEngine) !== scores[scores.length - 1]) console.log(`  ${entry.name} fold ${f}: the base checkout's ${version} scores differently`);
    }
  }
  sumOurs += fitOurs;
  sumBase += fitBase;
  sumBaseCandidate += fitBaseCandidate;
  const score = mean(scores);
  const base = mean(baseScores);
  const better = score === base ? 'same' : (task === 'binary' ? score > base : score < base) ? 'better' : 'worse';
  console.log(`${entry.name.padEnd(20)} ${task.padEnd(10)} ${version} ${score.toFixed(4)} | 1.0.0 ${base.toFixed(4)} ${better.padEnd(6)} | fit ${fitOurs.toFixed(1)} s vs ${fitBase.toFixed(1)} s, x${(fitOurs / fitBase).toFixed(2)}${baseCandidate ? ` | base ${version} ${fitBaseCandidate.toFixed(1)} s, x${(fitBaseCandidate / fitBase).toFixed(2)}` : ''}`);
  out.push({ name: entry.name, task, score, v1_score: base, fit_s: fitOurs, v1_fit_s: fitBase, ...(baseCandidate ? { base_candidate_fit_s: fitBaseCandidate } : {}) });
}
console.log(`summed fit: ${sumOurs.toFixed(1)} s vs 1.0.0${baseFrom ? ` (${baseFrom})` : ''} ${sumBase.toFixed(1)} s, x${(sumOurs / sumBase).toFixed(2)}${baseCandidate ? `; base ${version} ${sumBaseCandidate.toFixed(1)} s, x${(sumBaseCandidate / sumBase).toFixed(2)}` : ''}`);
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ version, config, folds: nFolds, seed, datasets: out, fit_s: sumOurs, v1_fit_s: sumBase, base_from: baseFrom ?? null, ...(baseCandidate ? { base_candidate_fit_s: sumBaseCandidate } : {}) }, null, 2));
