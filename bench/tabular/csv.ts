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

/**
 * The target column as numbers: values for regression, else class indices with the classes sorted by
 * their string form (`classKeys`), as every system of the benchmark is scored.
 */
export function encodedTarget(rows: BenchRow[], target: string, regression: boolean): { y: number[]; classKeys: string[] } {
  if (regression) return { y: rows.map((r) => Number(r[target])), classKeys: [] };
  const classKeys = [...new Set(rows.map((r) => String(r[target])))].sort();
  const index = new Map(classKeys.map((k, i) => [k, i]));
  return { y: rows.map((r) => index.get(String(r[target])) as number), classKeys };
}
