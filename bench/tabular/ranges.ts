/**
 * Which text columns of a collection read as numeric ranges (engines/tabular/ranges.ts; CategoryRule.ranges):
 * per dataset, each such column with its labels and their numbers, from the whole file's rows.
 *
 *   tsx bench/tabular/ranges.ts [--data DIR] [--only a,b]
 */
import { analyse } from '../../engines/tabular/schema';
import { CATEGORY_RULE_V10 } from '../../engines/tabular/schema';
import { DEV_DATA_DIR, manifestEntries } from './datasets';
import { readCsv } from './csv';
import { arg } from './cli';
import * as path from 'path';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
for (const entry of manifestEntries(dataDir, only)) {
  const rows = readCsv(path.join(dataDir, `${entry.name}.csv`));
  const a = analyse(rows, 'target', entry.task === 'regression' ? 'regression' : 'classification', { ...CATEGORY_RULE_V10, ranges: 'beside' });
  const cols = a.columns.filter((c) => c.rangeValues);
  if (cols.length === 0) continue;
  console.log(`${entry.name} (${entry.task}, ${rows.length} rows):`);
  for (const c of cols) {
    const pairs = (c.categories ?? []).map((l, i) => [l, c.rangeValues?.[i]] as const).sort((x, y) => (x[1] as number) - (y[1] as number));
    console.log(`  ${c.name}: ${pairs.map(([l, v]) => `${l}=${v}`).join(', ')}`);
  }
}
