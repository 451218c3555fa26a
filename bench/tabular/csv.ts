/** CSV loading for the benchmark (papaparse, numeric text typed, empty cells -> null). */
import * as fs from 'fs';
import Papa from 'papaparse';

export type BenchRow = Record<string, string | number | boolean | null>;

export function readCsv(file: string): BenchRow[] {
  const text = fs.readFileSync(file, 'utf8');
  const parsed = Papa.parse<Record<string, unknown>>(text, { header: true, dynamicTyping: true, skipEmptyLines: true });
  return parsed.data.map((r) => {
    const o: BenchRow = {};
    for (const [k, v] of Object.entries(r)) {
      o[k] = v === '' || v === undefined || v === null ? null : (v as string | number | boolean);
    }
    return o;
  });
}
