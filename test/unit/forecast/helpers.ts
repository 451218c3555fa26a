import { mulberry32, normalGenerator } from '../../../engines/forecast/math';
import type { Row } from '../../../engines/forecast';

export function normals(seed: number): () => number {
  return normalGenerator(mulberry32(seed));
}

/** Rows with YYYY-MM-01 monthly timestamps starting at 2000-01. */
export function monthlyRows(values: number[], extra: Record<string, unknown> = {}): Row[] {
  return values.map((v, i) => {
    const y = 2000 + Math.floor(i / 12);
    const m = (i % 12) + 1;
    return { date: `${y}-${String(m).padStart(2, '0')}-01`, value: v, ...extra };
  });
}

/** Rows with consecutive daily timestamps from 2020-01-01. */
export function dailyRows(values: number[], extra: Record<string, unknown> = {}): Row[] {
  return values.map((v, i) => ({ date: new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10), value: v, ...extra }));
}
