/**
 * Exact speed work on the trees: two copies of the engine (`--a` and `--b`, each a directory holding the
 * repository's engines/tabular, e.g. a `git archive` of the base commit and this working tree) fit 19.0.0's
 * trees (fitCore, the cross-fit, with the linear start; what phaseprof.ts times as "trees") on the first
 * benchmark fold of each set, alternated in one process (A B, then B A, ...) on the same prepared data.
 * Prints the CPU seconds of each fit, the ratio B/A of their sums and whether the two copies' out-of-fold
 * raw scores are identical bit for bit (a quick check; the proof of unchanged models is sha.ts).
 *
 *   tsx bench/tabular/abcore.ts --a /tmp/base --b . [--data DIR] [--only a,b] [--reps 2]
 */
import * as path from 'path';
import { arg } from './cli';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { cpuSeconds } from './measure';

type Pipeline = typeof import('../../engines/tabular/pipeline');
type Train = typeof import('../../engines/tabular/train');

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const reps = Number(arg('reps') ?? 2);
const roots = [arg('a'), arg('b')].map((r) => {
  if (!r) throw new Error('--a DIR and --b DIR: the two copies of the repository to compare');
  return path.resolve(r);
});

async function load(root: string): Promise<{ pipeline: Pipeline; train: Train }> {
  const pipeline = (await import(path.join(root, 'engines/tabular/pipeline.ts'))) as Pipeline;
  const train = (await import(path.join(root, 'engines/tabular/train.ts'))) as Train;
  return { pipeline, train };
}

async function main(): Promise<void> {
  const copies = [await load(roots[0]), await load(roots[1])];
  const sums = [0, 0];
  for (const entry of manifestEntries(dataDir, only)) {
    const d = loadDataset(dataDir, entry, 5, 0);
    const task = d.task === 'regression' ? ('regression' as const) : ('classification' as const);
    const { train } = foldSplit(d, 0);
    const { pipeline } = copies[0];
    const p = pipeline.prepare(train, 'target', task, pipeline.categoryRuleFor('19.0.0'));
    const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
    const times: number[][] = [[], []];
    const oof: Float64Array[] = [];
    for (let r = 0; r < reps; r++) {
      for (const c of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const t0 = cpuSeconds();
        const start = copies[c].pipeline.linearStart(p);
        const core = copies[c].train.fitCore(input, copies[c].pipeline.resolveConfigV19(p), 0, undefined, start?.offsets);
        times[c].push(cpuSeconds() - t0);
        oof[c] = core.oofRaw;
      }
    }
    let same = oof[0].length === oof[1].length;
    for (let i = 0; same && i < oof[0].length; i++) same = Object.is(oof[0][i], oof[1][i]);
    const s = times.map((t) => t.reduce((x, y) => x + y, 0));
    sums[0] += s[0];
    sums[1] += s[1];
    console.log(`${entry.name}\tA ${times[0].map((x) => x.toFixed(2)).join(' ')}\tB ${times[1].map((x) => x.toFixed(2)).join(' ')}\tB/A ${(s[1] / s[0]).toFixed(3)}\tidentical ${same}`);
  }
  console.log(`total\tA ${sums[0].toFixed(2)}\tB ${sums[1].toFixed(2)}\tB/A ${(sums[1] / sums[0]).toFixed(3)}`);
}

void main();
