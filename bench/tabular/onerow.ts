/**
 * One-row prediction in-process, the engine's share of the service's one-row call: microseconds per
 * predictRows call with a single row, for models of several engine versions trained on all rows of a
 * development dataset (seed 0); mean over 20,000 calls after 2,000 warm-up calls, one core.
 *
 *   tsx bench/tabular/onerow.ts [--versions 5.0.0,7.0.0] [--only credit_g,vehicle,bodyfat]
 */
import { predictRows, trainTabular, type EngineVersion } from '../../engines/tabular/index';
import { DEV_DATA_DIR, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';

const versions = (arg('versions') ?? '5.0.0,7.0.0').split(',') as EngineVersion[];
const only = new Set((arg('only') ?? 'credit_g,vehicle,bodyfat').split(','));
const CALLS = 20_000;
for (const entry of manifestEntries(DEV_DATA_DIR, only)) {
  const d = loadDataset(DEV_DATA_DIR, entry, 5, 0);
  const task = d.task === 'regression' ? 'regression' : 'classification';
  const one = [Object.fromEntries(Object.entries(d.rows[0]).filter(([k]) => k !== 'target'))];
  const cells = versions.map((engineVersion) => {
    const { model } = trainTabular(d.rows, { target: 'target', task, seed: 0, engineVersion });
    for (let i = 0; i < 2_000; i++) predictRows(model, one);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) predictRows(model, one);
    const micros = Number(process.hrtime.bigint() - t0) / CALLS / 1_000;
    return `${engineVersion} ${micros.toFixed(1)} µs${model.linear ? ' (with a linear part)' : ''}`;
  });
  console.log(`${d.name.padEnd(14)} ${cells.join('  ')}`);
}
