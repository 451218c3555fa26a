/**
 * The forest member's out-of-fold gain on binary sets (sixteenth round): on each benchmark fold, the
 * engine version is trained and the forest member (addForestMember, the version's forest options with
 * an override) is added to its cross-fit as that version's training would, and the out-of-fold ROC AUC
 * of the model with and without the forest, the forest's weight and its CPU seconds are printed. On sets
 * of at most 500 training rows the version's own model may hold a forest already; this measures the
 * member on the version's core either way.
 *
 *   tsx bench/tabular/forestgain.ts [--data DIR] [--only a,b] [--seed 0] [--engine-version 14.0.0] [--forest JSON]
 */
import { addForestMember, categoryRuleFor, prepare, trainPrepared, type EngineVersion } from '../../engines/tabular/pipeline';
import { mixOutputs, type ForestOptions } from '../../engines/tabular/forest';
import { rawToOutput } from '../../engines/tabular/train';
import { rocAuc } from '../../engines/tabular/metrics';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const seed = Number(arg('seed') ?? 0);
const version = (arg('engine-version') ?? '14.0.0') as EngineVersion;
const override = arg('forest') ? (JSON.parse(arg('forest') as string) as Partial<ForestOptions>) : { maxRows: 1e9 };

const auc = (y: Float64Array, out: Float64Array): number => {
  const rows: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(out[i * 2 + 1])) rows.push(i);
  return rocAuc(Float64Array.from(rows, (i) => y[i]), Float64Array.from(rows, (i) => out[i * 2 + 1]));
};

for (const entry of manifestEntries(dataDir, only)) {
  if (entry.task !== 'binary') continue;
  const d = loadDataset(dataDir, entry, 5, seed);
  const parts: string[] = [];
  let cpu = 0;
  let gainSum = 0;
  for (let f = 0; f < 5; f++) {
    const { train } = foldSplit(d, f);
    const p = prepare(train, 'target', 'classification', categoryRuleFor(version));
    const r = trainPrepared(p, { engineVersion: version, seed });
    const t0 = cpuSeconds();
    const forest = addForestMember(p, r.core, seed, override, '9.0.0');
    cpu += cpuSeconds() - t0;
    const model = rawToOutput(p.task, r.core.oofRaw, p.n, p.nClasses);
    const base = auc(p.y, model);
    const mixed = model.slice();
    if (forest.oofOut && (forest.weight ?? 0) > 0) mixOutputs(mixed, forest.oofOut, forest.weight as number);
    const gain = auc(p.y, mixed) - base;
    gainSum += gain;
    parts.push(`w ${(forest.weight ?? 0).toFixed(2)} +${gain.toFixed(4)}`);
  }
  console.log(`${d.name.padEnd(16)} n ${Math.round(d.rows.length * 0.8)} F ${Number(entry.features)} mean OOF AUC gain ${(gainSum / 5).toFixed(4)} forest CPU ${cpu.toFixed(1)} s | ${parts.join(' | ')}`);
}
