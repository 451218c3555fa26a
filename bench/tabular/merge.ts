/**
 * Merges the JSON files of runs of `bench:tabular` over disjoint `--only` lists (run side by side to
 * use both cores of the machine) into one file with the summary recomputed over all datasets, in
 * manifest order: `tsx bench/tabular/merge.ts OUT.json PART1.json PART2.json ...`.
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
const all = files.flatMap((f) => f.datasets);
const names = new Set<string>();
for (const d of all) {
  if (names.has(d.name)) throw new Error(`${d.name} is in more than one part`);
  names.add(d.name);
}
all.sort((a, b) => manifest.indexOf(a.name) - manifest.indexOf(b.name));
const results: DatasetResult[] = all.map((d) => ({ name: d.name, task: d.task, rows: 0, results: d.results }));
const throughput = files.find((f) => f.summary.throughput)?.summary.throughput ?? null;
fs.writeFileSync(out, JSON.stringify({ datasets: all, summary: { ...summarise(results), folds, seed, throughput } }, null, 2));
console.log(`${all.length} datasets -> ${out}`);
