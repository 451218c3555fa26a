/**
 * Fingerprints of trained models: SHA-1 of the serialised model trained on all rows of a benchmark
 * dataset with seed 0, per engine version. Speed work on the engine must leave these unchanged (the
 * recorded accuracy of every version stays valid only if its models are byte-identical).
 *
 *   tsx bench/tabular/sha.ts [--data DIR] [--versions 1.0.0,4.0.0] [--only bodyfat,penguins,credit_approval,horse_colic,adult]
 *
 * `--predictions` adds the fingerprint of the model's predictions of the set's own rows, scored 1,000 at a
 * time as the service's predict does (prediction-only speed work must leave these unchanged too).
 *
 * `--data .bench/heldout` fingerprints the held-out collection's sets (caravan, police_injury and
 * polls_2016 train 11.0.0's group member, which no development set keeps).
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import Papa from 'papaparse';
import { predictRows, serialiseModel, trainTabular, type EngineVersion } from '../../engines/tabular/index';
import { readCsv } from './csv';
import { arg } from './cli';
import { DEV_DATA_DIR } from './datasets';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const versions = (arg('versions') ?? '1.0.0,4.0.0').split(',') as EngineVersion[];
const manifest = Papa.parse<Record<string, string>>(fs.readFileSync(path.join(dataDir, 'manifest.csv'), 'utf8'), { header: true, skipEmptyLines: true }).data;
const only = arg('only') === 'all' ? manifest.map((m) => m.name) : (arg('only') ?? 'bodyfat,penguins,credit_approval,horse_colic,adult').split(',');
const withPredictions = process.argv.includes('--predictions');
for (const name of only) {
  const entry = manifest.find((m) => m.name === name);
  if (!entry) throw new Error(`unknown dataset ${name}`);
  const rows = readCsv(path.join(dataDir, `${name}.csv`));
  for (const v of versions) {
    const t0 = process.cpuUsage();
    const { model } = trainTabular(rows, { target: 'target', task: entry.task === 'regression' ? 'regression' : 'classification', seed: 0, engineVersion: v });
    const t = process.cpuUsage(t0);
    const sha = createHash('sha1').update(serialiseModel(model)).digest('hex');
    let scored = '';
    if (withPredictions) {
      const hash = createHash('sha1');
      for (let i = 0; i < rows.length; i += 1000) hash.update(JSON.stringify(predictRows(model, rows.slice(i, i + 1000))));
      scored = ` predictions ${hash.digest('hex')}`;
    }
    console.log(`${name.padEnd(18)} ${v} ${sha}${scored} (${((t.user + t.system) / 1e6).toFixed(1)} s CPU)`);
  }
}
