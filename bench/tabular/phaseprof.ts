/**
 * Where 17.0.0's fit time goes (bench/RESULTS.md, twenty-third round of issue 15): trains each set's
 * benchmark folds with 17.0.0's steps (trainPrepared's, in its order) and prints the CPU seconds of
 * each phase: prepare (analysis, encoding), trees (fitCore, with the linear start when the version has
 * one), linear (addLinearMember), forest (addForestMember), knn (addKnnMember), group (addGroupMember),
 * and which members were kept. Models are not built or scored.
 *
 *   tsx bench/tabular/phaseprof.ts [--data DIR] [--only a,b] [--folds 5] [--seed 0]
 */
import { addForestMember, addGroupMember, addKnnMember, addLinearMember, categoryRuleFor, forestOverrideFor, groupOptionsFor, isSmallData, knnOptionsFor, linearStart, prepare, resolveConfigV14 } from '../../engines/tabular/pipeline';
import { fitCore, rawToOutput } from '../../engines/tabular/train';
import { mixOutputs } from '../../engines/tabular/forest';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const nFolds = Number(arg('folds') ?? 5);
const seed = Number(arg('seed') ?? 0);
const version = '17.0.0' as const;
const phases = ['prepare', 'trees', 'linear', 'forest', 'knn', 'group'] as const;
const total: Record<string, number> = Object.fromEntries(phases.map((p) => [p, 0]));
console.log(['set', 'rows', 'task', ...phases, 'sum', 'rounds/fold', 'kept'].join('\t'));
for (const entry of manifestEntries(dataDir, only)) {
  const d = loadDataset(dataDir, entry, nFolds, seed);
  const task = d.task === 'regression' ? ('regression' as const) : ('classification' as const);
  const t: Record<string, number> = Object.fromEntries(phases.map((p) => [p, 0]));
  const kept = new Set<string>();
  const rounds: number[] = [];
  for (let f = 0; f < nFolds; f++) {
    const { train } = foldSplit(d, f);
    let c = cpuSeconds();
    const lap = (name: string): void => {
      const now = cpuSeconds();
      t[name] += now - c;
      c = now;
    };
    const p = prepare(train, 'target', task, categoryRuleFor(version));
    lap('prepare');
    const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
    const start = linearStart(p);
    const trees = fitCore(input, resolveConfigV14(p), seed, undefined, start?.offsets);
    rounds.push(...trees.foldModels.map((m) => m.rounds));
    lap('trees');
    const startPart = start?.part();
    const linear = startPart ? { part: startPart, core: trees } : addLinearMember(p, trees);
    if (linear.part) kept.add('linear');
    lap('linear');
    const core = linear.core;
    const forest = addForestMember(p, core, seed, forestOverrideFor(version, p), '9.0.0');
    if (forest.part) kept.add('forest');
    lap('forest');
    const oofOut = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
    if (forest.part && forest.oofOut) mixOutputs(oofOut, forest.oofOut, forest.part.weight);
    const ko = knnOptionsFor(version);
    const knn = ko && isSmallData(p) ? addKnnMember(p, core, oofOut, ko) : undefined;
    if (knn?.part) kept.add('knn');
    lap('knn');
    const group = addGroupMember(p, core, oofOut, groupOptionsFor(version));
    if (group.part) kept.add('group');
    lap('group');
  }
  const sum = phases.reduce((s, ph) => s + t[ph], 0);
  for (const ph of phases) total[ph] += t[ph];
  const meanRounds = rounds.reduce((s, r) => s + r, 0) / rounds.length;
  console.log([entry.name, entry.rows, entry.task, ...phases.map((ph) => t[ph].toFixed(2)), sum.toFixed(2), meanRounds.toFixed(0), [...kept].join('+') || '-'].join('\t'));
}
const all = phases.reduce((s, ph) => s + total[ph], 0);
console.log(['total', '', '', ...phases.map((ph) => `${total[ph].toFixed(2)} (${((100 * total[ph]) / all).toFixed(0)}%)`), all.toFixed(2)].join('\t'));
