/**
 * Engine 11's group member, set by set (bench/RESULTS.md, engine 11.0.0): on each benchmark fold of
 * every dataset of at least `minRows` training rows, trains 11.0.0 and prints the key the member found
 * (its columns), the share by which the mixture lowers the model's out-of-fold loss (the gate is 2.5 %),
 * the model's worth in rows and the member's weight it chose (w 0: not kept), the key search's CPU seconds (a second search on the same folds,
 * timed alone; centred on the model's out-of-fold outputs when the configuration asks for it: before 2026-11-27 it timed the plain search) and, for kept members, how many rows a second its lookup mixes in (100,000 rows).
 *
 *   tsx bench/tabular/group.ts [--data DIR] [--only a,b] [--seed 0] [--config JSON]
 */
import { encodeForModel } from '../../engines/tabular/model';
import { groupOutputs, mixGroup, searchGroupKey, DEFAULT_GROUP_OPTIONS } from '../../engines/tabular/group';
import { categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { rawToOutput, type EngineConfigOverride } from '../../engines/tabular/train';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const seed = Number(arg('seed') ?? 0);
const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const config = arg('config') ? (JSON.parse(arg('config') as string) as EngineConfigOverride) : undefined;
const opts = { ...DEFAULT_GROUP_OPTIONS, ...(config?.group ?? {}) };

let searchSeconds = 0;
for (const entry of manifestEntries(dataDir, only)) {
  const d = loadDataset(dataDir, entry, 5, seed);
  const folds: string[] = [];
  for (let f = 0; f < 5; f++) {
    const { train, test } = foldSplit(d, f);
    if (train.length < opts.minRows) break;
    const p = prepare(train, 'target', d.task === 'regression' ? 'regression' : 'classification', categoryRuleFor('11.0.0'));
    const r = trainPrepared(p, { engineVersion: '11.0.0', seed, config });
    const fold = new Int32Array(p.n).fill(-1);
    r.core.foldModels.forEach((fm, m) => fm.validRows.forEach((i) => (fold[i] = m)));
    // the centred search (--config '{"group":{"centred":4}}') needs the model's out-of-fold outputs (at least 1,000 rows: no forest member, so the core's)
    const centre = opts.centred !== undefined ? rawToOutput(p.task, r.core.oofRaw, p.n, p.nClasses) : undefined;
    const t0 = cpuSeconds();
    searchGroupKey({ X: p.X, n: p.n, F: p.F, y: p.y, K: groupOutputs(p.task, p.nClasses), regression: p.task === 'regression' }, fold, r.core.foldModels.length, opts, centre);
    const searched = cpuSeconds() - t0;
    searchSeconds += searched;
    const names = (r.group?.columns ?? []).map((c) => p.analysis.features[c].name).join('+');
    let speed = '';
    const part = r.model.group;
    if (part) {
      const rows = Array.from({ length: 100000 }, (_, i) => test[i % test.length]);
      const X = encodeForModel(r.model, rows);
      const t1 = process.hrtime.bigint();
      mixGroup(part, X, rows.length, r.model.features.length, new Float64Array(rows.length * part.nOutputs).fill(0.5));
      speed = ` ${Math.round(rows.length / (Number(process.hrtime.bigint() - t1) / 1e9))} rows/s`;
    }
    folds.push(`[${names}] gain ${(r.group?.gain ?? 0).toFixed(3)} s ${part?.smooth ?? "-"} w ${part?.weight ?? 0} ${searched.toFixed(3)}s${speed}`);
  }
  if (folds.length > 0) console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} ${folds.join(' | ')}`);
}
console.log(`key search, all folds: ${searchSeconds.toFixed(2)} CPU s`);
