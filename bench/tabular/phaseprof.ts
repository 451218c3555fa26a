/**
 * Where the fit time of 17.0.0, 18.0.0 or 19.0.0 goes (bench/RESULTS.md, twenty-third and twenty-fourth rounds of
 * issue 15): trains each set's benchmark folds with the version's steps (trainPrepared's, in its order)
 * and prints the CPU seconds of
 * each phase: prepare (analysis, encoding), trees (fitCore, with the linear start when the version has
 * one), linear (addLinearMember), forest (addForestMember), knn (addKnnMember), group (addGroupMember),
 * and which members were kept, and the CPU seconds of the members that ran and were not kept (what a
 * perfect gate before each member could save at most). Models are not built or scored.
 *
 *   tsx bench/tabular/phaseprof.ts [--data DIR] [--only a,b] [--folds 5] [--seed 0] [--version 18.0.0]
 */
import { addForestMember, addGroupMember, addKnnMember, addLinearMember, categoryRuleFor, forestOverrideFor, groupOptionsFor, isSmallData, knnOptionsFor, linearStart, prepare, resolveConfigV14, resolveConfigV18, resolveConfigV19 } from '../../engines/tabular/pipeline';
import { fitCore, rawToOutput } from '../../engines/tabular/train';
import { mixOutputs } from '../../engines/tabular/forest';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const nFolds = Number(arg('folds') ?? 5);
const seed = Number(arg('seed') ?? 0);
const version = arg('version') ?? '18.0.0';
// the versions whose steps are those below (trainPrepared's); 18.0.0 and 19.0.0 differ only in their trees' configuration
if (version !== '17.0.0' && version !== '18.0.0' && version !== '19.0.0') throw new Error(`--version 17.0.0, 18.0.0 or 19.0.0, not ${version}`);
const resolveTrees = version === '19.0.0' ? resolveConfigV19 : version === '18.0.0' ? resolveConfigV18 : resolveConfigV14;
const phases = ['prepare', 'trees', 'linear', 'forest', 'knn', 'group'] as const;
const total: Record<string, number> = Object.fromEntries(phases.map((p) => [p, 0]));
// CPU seconds of members that ran and were not kept, per member
const unkept: Record<string, number> = { linear: 0, forest: 0, knn: 0, group: 0 };
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
    const lap = (name: string, kept = true): void => {
      const now = cpuSeconds();
      t[name] += now - c;
      if (!kept) unkept[name] += now - c;
      c = now;
    };
    const p = prepare(train, 'target', task, categoryRuleFor(version));
    lap('prepare');
    const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
    const start = linearStart(p);
    const trees = fitCore(input, resolveTrees(p), seed, undefined, start?.offsets);
    rounds.push(...trees.foldModels.map((m) => m.rounds));
    lap('trees');
    const startPart = start?.part();
    const linear = startPart ? { part: startPart, core: trees } : addLinearMember(p, trees);
    if (linear.part) kept.add('linear');
    lap('linear', linear.part !== undefined);
    const core = linear.core;
    const forest = addForestMember(p, core, seed, forestOverrideFor(version, p), '9.0.0');
    if (forest.part) kept.add('forest');
    lap('forest', forest.part !== undefined);
    const oofOut = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
    if (forest.part && forest.oofOut) mixOutputs(oofOut, forest.oofOut, forest.part.weight);
    const ko = knnOptionsFor(version);
    const knn = ko && isSmallData(p) ? addKnnMember(p, core, oofOut, ko) : undefined;
    if (knn?.part) kept.add('knn');
    lap('knn', knn === undefined || knn.part !== undefined);
    const group = addGroupMember(p, core, oofOut, groupOptionsFor(version));
    if (group.part) kept.add('group');
    lap('group', group.part !== undefined);
  }
  const sum = phases.reduce((s, ph) => s + t[ph], 0);
  for (const ph of phases) total[ph] += t[ph];
  const meanRounds = rounds.reduce((s, r) => s + r, 0) / rounds.length;
  console.log([entry.name, entry.rows, entry.task, ...phases.map((ph) => t[ph].toFixed(2)), sum.toFixed(2), meanRounds.toFixed(0), [...kept].join('+') || '-'].join('\t'));
}
const all = phases.reduce((s, ph) => s + total[ph], 0);
console.log(['total', '', '', ...phases.map((ph) => `${total[ph].toFixed(2)} (${((100 * total[ph]) / all).toFixed(0)}%)`), all.toFixed(2)].join('\t'));
console.log(`run and not kept (CPU s): ${Object.entries(unkept).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; all ${Object.values(unkept).reduce((a, b) => a + b, 0).toFixed(2)} of ${all.toFixed(2)}`);
