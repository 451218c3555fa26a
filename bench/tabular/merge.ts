/**
 * Merges the JSON files of runs of `bench:tabular` over disjoint `--only` lists (run side by side to
 * use both cores of the machine) into one file with the summary recomputed over all datasets, in
 * manifest order: `tsx bench/tabular/merge.ts OUT.json PART1.json PART2.json ...`.
 * A dataset may appear in several parts when they hold different systems (e.g. ours from a
 * `--peers none` run and the peers from a `--skip-ours` run); a system in several parts takes the
 * figures of the last (to re-time a peer under the same load as ours, e.g. `--no-cache`).
 * The parts must share folds and seed; the throughput of the first part that measured it is kept.
 */
import * as fs from 'fs';
import * as path from 'path';
import { summarise, type DatasetResult, type SystemResult } from './run';

interface Part {
  datasets: Array<{ name: string; task: DatasetResult['task']; results: Record<string, SystemResult> }>;
  summary: { folds: number; seed: number; throughput: unknown };
}

const [out, ...parts] = process.argv.slice(2);
const files = parts.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as Part);
const folds = files[0].summary.folds;
const seed = files[0].summary.seed;
if (files.some((f) => f.summary.folds !== folds || f.summary.seed !== seed)) throw new Error('parts differ in folds or seed');
const manifest = fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'tabular', 'manifest.csv'), 'utf8')
  .split('\n').slice(1).filter((l) => l.trim()).map((l) => l.split(',')[0]);
const byName = new Map<string, Part['datasets'][number]>();
for (const d of files.flatMap((f) => f.datasets)) {
  const seen = byName.get(d.name);
  if (!seen) {
    byName.set(d.name, { ...d, results: { ...d.results } });
    continue;
  }
  for (const [system, r] of Object.entries(d.results)) seen.results[system] = r;
}
const all = [...byName.values()];
all.sort((a, b) => manifest.indexOf(a.name) - manifest.indexOf(b.name));
const results: DatasetResult[] = all.map((d) => ({ name: d.name, task: d.task, rows: 0, results: d.results }));
const throughput = files.find((f) => f.summary.throughput)?.summary.throughput ?? null;
fs.writeFileSync(out, JSON.stringify({ datasets: all, summary: { ...summarise(results), folds, seed, throughput } }, null, 2));
console.log(`${all.length} datasets -> ${out}`);
