/**
 * Prediction cost of two variants of the engine, paired: each trained once on the first `--rows` rows
 * of a dataset (seed 0), then, alternated in one process, `predictRows` on the next rows in batches
 * of 1,000 and on one row at a time (CPU seconds; repeated `--passes` times, medians), and the
 * serialised artefact's size. Prints rows per second and one-row milliseconds per variant and B/A.
 *
 *   tsx bench/tabular/predcost.ts [--data DIR] [--only adult] [--rows 8000] [--passes 5]
 *     [--a 16.0.0] [--a-config JSON] [--b 16.0.0] [--b-config JSON] [--tile]
 *
 * `--tile`: a set with fewer than 1,000 rows after the first `--rows` has its remaining rows repeated up
 * to 1,000 (small sets such as sonar, where the kNN member of 17.0.0 is kept).
 */
import * as path from 'path';
import { predictRows, serialiseModel, trainTabular, type EngineConfigOverride, type EngineVersion, type Row } from '../../engines/tabular/index';
import { DEV_DATA_DIR, manifestEntries } from './datasets';
import { readCsv } from './csv';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = new Set((arg('only') ?? 'adult').split(','));
const nTrain = Number(arg('rows') ?? 8000);
const passes = Number(arg('passes') ?? 5);
const variants = (['a', 'b'] as const).map((v) => ({
  version: (arg(v) ?? '16.0.0') as EngineVersion,
  config: arg(`${v}-config`) ? (JSON.parse(arg(`${v}-config`) as string) as EngineConfigOverride) : undefined,
}));
const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

for (const entry of manifestEntries(dataDir, only)) {
  const rows = readCsv(path.join(dataDir, `${entry.name}.csv`)) as Row[];
  const train = rows.slice(0, nTrain);
  const test = rows.slice(nTrain).map((r) => {
    const rest: Row = { ...r };
    delete rest.target;
    return rest;
  });
  if (process.argv.includes('--tile') && test.length > 0) for (let i = 0; test.length < 1000; i++) test.push(test[i]);
  if (test.length < 1000) throw new Error(`${entry.name}: fewer than 1,000 rows after the first ${nTrain}`);
  const task = entry.task === 'regression' ? ('regression' as const) : ('classification' as const);
  const models = variants.map((v) => trainTabular(train, { target: 'target', task, seed: 0, engineVersion: v.version, config: v.config }).model);
  const batch = models.map(() => [] as number[]);
  const one = models.map(() => [] as number[]);
  const oneRows = test.slice(0, 1000);
  for (let pass = 0; pass <= passes; pass++) {
    const order = pass % 2 === 0 ? [0, 1] : [1, 0];
    for (const m of order) {
      let t0 = cpuSeconds();
      for (let s = 0; s + 1000 <= test.length; s += 1000) predictRows(models[m], test.slice(s, s + 1000));
      const tb = cpuSeconds() - t0;
      t0 = cpuSeconds();
      for (const r of oneRows) predictRows(models[m], [r]);
      const to = cpuSeconds() - t0;
      if (pass > 0) {
        batch[m].push((Math.floor(test.length / 1000) * 1000) / tb);
        one[m].push((to / oneRows.length) * 1000);
      }
    }
  }
  const size = models.map((m) => serialiseModel(m).length / 1e6);
  const forest = models.map((m) => (m.forest ? `forest w ${m.forest.weight}, ${m.forest.treeRoot.length} trees` : 'no forest') + (m.knn ? `, kNN w ${m.knn.weight} k ${m.knn.k} on ${m.knn.n} rows` : ''));
  console.log(`${entry.name}: train ${train.length} rows, predict ${test.length}`);
  ['A', 'B'].forEach((name, m) => {
    console.log(`  ${name} ${variants[m].version} ${variants[m].config ? JSON.stringify(variants[m].config) : ''}: ${Math.round(median(batch[m]))} rows/s in batches of 1,000, one row ${median(one[m]).toFixed(4)} ms, artefact ${size[m].toFixed(2)} MB, ${forest[m]}`);
  });
  console.log(`  B/A: batch throughput ×${(median(batch[1]) / median(batch[0])).toFixed(2)}, one-row time ×${(median(one[1]) / median(one[0])).toFixed(2)}`);
}
