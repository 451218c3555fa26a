/**
 * Daily series with a weekly pattern, as rows of one table (`date`, `item`, `value`): `series` series
 * of `points` days from 2025-01-01. The engine threads forecast a few at start to compile their code
 * (engine-worker.ts, warmUp); bench:api sends them to the forecast route, and the forecast benchmarks
 * and tests use them as the shape most forecast calls have.
 */
export function syntheticDailyRows(series: number, points: number): Array<{ date: string; item: string; value: number }> {
  const week = [0, 3, 5, 2, 8, 12, 6];
  return Array.from({ length: series * points }, (_, k) => {
    const s = Math.floor(k / points);
    const i = k % points;
    return { date: new Date(Date.UTC(2025, 0, 1) + i * 86_400_000).toISOString().slice(0, 10), item: `s${s}`, value: 100 + s + i * 0.3 + week[i % 7]! + ((i * 7919 + s * 31) % 17) / 4 };
  });
}
