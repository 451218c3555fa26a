/**
 * Training only, for profiles and CPU timing: trains an engine version on the first `--folds` benchmark
 * folds (as paired.ts: same folds and seed) of each dataset and prints CPU seconds, nothing else.
 *
 *   node --cpu-prof --import tsx bench/tabular/fitprof.ts [--engine-version 4.0.0] [--only letter] [--folds 1]
 */
import * as fs from 'fs';
import * as path from 'path';
import Papa from 'papaparse';
import { trainTabular, type EngineVersion } from '../../engines/tabular/index';
import { makeFolds } from '../../engines/tabular/train';
import { readCsv } from './csv';
import { arg } from './cli';

const dataDir = process.env.TABULAR_DATA ?? path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'tabular');
const version = (arg('engine-version') ?? '4.0.0') as EngineVersion;
const useFolds = Number(arg('folds') ?? 1);
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const manifest = Papa.parse<Record<string, string>>(fs.readFileSync(path.join(dataDir, 'manifest.csv'), 'utf8'), { header: true, skipEmptyLines: true }).data;
let total = 0;
for (const entry of manifest.filter((m) => !only || only.has(m.name))) {
  const rows = readCsv(path.join(dataDir, `${entry.name}.csv`));
  let y: number[];
  let K = 0;
  if (entry.task === 'regression') y = rows.map((r) => Number(r.target));
  else {
    const keys = [...new Set(rows.map((r) => String(r.target)))].sort();
    const idx = new Map(keys.map((k, i) => [k, i]));
    y = rows.map((r) => idx.get(String(r.target)) as number);
    K = keys.length;
  }
  const folds = makeFolds(y, 5, 0, K);
  let s = 0;
  for (let f = 0; f < useFolds; f++) {
    const tr = rows.filter((_, i) => folds[i] !== f);
    const t0 = process.cpuUsage();
    trainTabular(tr, { target: 'target', task: entry.task === 'regression' ? 'regression' : 'classification', seed: 0, engineVersion: version });
    const t = process.cpuUsage(t0);
    s += (t.user + t.system) / 1e6;
  }
  total += s;
  console.log(`${entry.name.padEnd(20)} ${version} ${s.toFixed(2)} s CPU`);
}
console.log(`total ${total.toFixed(2)} s CPU`);
