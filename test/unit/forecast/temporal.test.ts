import { forecastSeries, prepareSeries } from '../../../engines/forecast';
import { aggregate, reconcileBlock, temporalForecast, temporalLevels } from '../../../engines/forecast/temporal';
import { monthlyRows } from './helpers';

const PATTERN = [5, 3, 8, 12, 20, 30, 35, 32, 22, 14, 9, 6];

/** Seasonal naive with the last season's increment: exact for a linear trend plus a period-s pattern. */
function seasonalDrift(x: number[], s: number, h: number): number[] {
  const n = x.length;
  const inc = s > 1 ? x[n - 1] - x[n - 1 - s] : x[n - 1] - x[n - 2];
  const out: number[] = [];
  for (let i = 0; i < h; i++) out.push(x[n - s + (i % s)] + (Math.floor(i / s) + 1) * inc);
  return out;
}

describe('temporal hierarchies', () => {
  test('levels are the divisors of the season with enough aggregated points; blocks end with the last observation', () => {
    expect(temporalLevels(50, 12, 8)).toEqual([1, 2, 3, 4, 6]); // 48 complete months: 4 years < 8
    expect(temporalLevels(120, 12, 8)).toEqual([1, 2, 3, 4, 6, 12]);
    expect(temporalLevels(20, 4, 8)).toEqual([1, 2]);
    expect(aggregate([1, 2, 3, 4, 5, 6, 7, 8], 2, 3)).toEqual([7, 11, 15]);
  });

  test('coherent base forecasts are returned unchanged', () => {
    const bottom = [1, 4, 2, 8, 5, 7];
    const levels = [1, 2, 3, 6];
    const base = levels.map((k) => aggregate(bottom, k, 6 / k));
    reconcileBlock(base, levels, 6).forEach((v, i) => expect(v).toBeCloseTo(bottom[i], 10));
  });

  test('incoherent forecasts: weighted least squares with variance proportional to the level', () => {
    // minimise (x1 − 1)² + (x2 − 3)² + (x1 + x2 − 8)² / 2  →  x = (2, 4)
    const r = reconcileBlock([[1, 3], [8]], [1, 2], 2);
    expect(r[0]).toBeCloseTo(2, 10);
    expect(r[1]).toBeCloseTo(4, 10);
  });

  test('exact level forecasts stay exact, aligned with the end of the history (length not a multiple of the season)', () => {
    const f = (t: number) => 100 + 0.7 * t + PATTERN[t % 12];
    const n = 77, h = 18;
    const y = Array.from({ length: n }, (_, t) => f(t));
    const truth = Array.from({ length: 24 }, (_, k) => f(n + k));
    const fc = temporalForecast(
      y,
      12,
      h,
      (steps) => ({ mean: truth.slice(0, steps), sd: new Array<number>(steps).fill(1) }),
      (x, s, steps) => seasonalDrift(x, s, steps),
    );
    expect(fc.mean).toHaveLength(h);
    fc.mean.forEach((v, k) => expect(v).toBeCloseTo(f(n + k), 6));
    expect(fc.sd).toEqual(new Array<number>(h).fill(1));
  });

  test('a biased bottom forecast is pulled towards the aggregated levels', () => {
    const f = (t: number) => 50 + PATTERN[t % 12];
    const n = 96, h = 12;
    const y = Array.from({ length: n }, (_, t) => f(t));
    const fc = temporalForecast(
      y,
      12,
      h,
      (steps) => ({ mean: Array.from({ length: steps }, (_, k) => f(n + k) + 6), sd: new Array<number>(steps).fill(1) }),
      (x, s, steps) => seasonalDrift(x, s, steps),
    );
    // five exact aggregated levels against one biased bottom level: most of the bias is removed
    fc.mean.forEach((v, k) => {
      expect(v - f(n + k)).toBeGreaterThan(0);
      expect(v - f(n + k)).toBeLessThan(2);
    });
  });

  test('THieF ETS member forecasts a purely seasonal monthly series exactly', () => {
    const y = Array.from({ length: 60 }, (_, t) => 50 + PATTERN[t % 12]);
    const s = prepareSeries(monthlyRows(y), { target: 'value', timestamp: 'date' })[0];
    const fc = forecastSeries(s, { horizon: 18, members: ['ets_temporal'] });
    expect(fc.models[0]).toMatch(/^THieF ETS/);
    fc.mean.forEach((v, k) => expect(Math.abs(v - (50 + PATTERN[(60 + k) % 12]))).toBeLessThan(0.05));
  });
});
