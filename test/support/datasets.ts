/** Deterministic synthetic datasets for the service tests (the engine's accuracy is benchmarked, not tested here). */
/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Row = Record<string, string | number | boolean | null>;

/** Binary target that depends on x1, x2 and colour, with some noise. */
export function churnRows(n: number, seed = 1): Row[] {
  const rand = prng(seed);
  return Array.from({ length: n }, () => {
    const x1 = Math.round(rand() * 1000) / 10;
    const x2 = Math.round(rand() * 100) / 10;
    const colour = rand() < 0.5 ? 'red' : 'blue';
    const score = x1 / 100 + (colour === 'red' ? 0.3 : -0.3) + (rand() - 0.5) * 0.4;
    return { x1, x2, colour, churned: score > 0.5 ? 'yes' : 'no' };
  });
}

export const withoutTarget = (rows: Row[], target: string): Row[] =>
  rows.map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => k !== target)));

export function toCsv(rows: Row[], separator = ','): string {
  const columns = Object.keys(rows[0] ?? {});
  const cell = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  return [columns.join(separator), ...rows.map((r) => columns.map((c) => cell(r[c])).join(separator))].join('\n');
}

/** `series` daily series of `points` days from 2025-01-01 with a weekly pattern, in one table (`date`, `item`, `value`). */
export { syntheticDailyRows as dailySeriesRows } from '../../services/synthetic-series';

/** `series` integer-position series of `points` each under item ids s0, s1, … (columns id, t, y): backtests of some seconds at 1,500 × 12. */
export function manySeries(series: number, points: number): Array<Record<string, string | number>> {
  const rows: Array<Record<string, string | number>> = [];
  for (let s = 0; s < series; s += 1) for (let t = 1; t <= points; t += 1) rows.push({ id: `s${s}`, t, y: ((t * 7 + s) % 5) + (t % 3) });
  return rows;
}
