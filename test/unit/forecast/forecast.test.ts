import { backtestSeries, forecastSeries, prepareSeries, SeriesError } from '../../../engines/forecast';
import type { Row } from '../../../engines/forecast';
import { dailyRows, monthlyRows, normals } from './helpers';

const PATTERN = [5, 3, 8, 12, 20, 30, 35, 32, 22, 14, 9, 6];

function one(rows: Row[]) {
  return prepareSeries(rows, { target: 'value', timestamp: 'date' })[0];
}

function noisySeasonal(n: number, seed: number): number[] {
  const z = normals(seed);
  return Array.from({ length: n }, (_, t) => (100 + 0.5 * t) * (1 + PATTERN[t % 12] / 40) + 3 * z());
}

describe('exact forecasts of simple series', () => {
  test('constant series', () => {
    const fc = forecastSeries(one(monthlyRows(new Array(24).fill(42))), { horizon: 6, quantiles: [0.1, 0.9] });
    fc.mean.forEach((v) => expect(v).toBeCloseTo(42, 8));
    fc.quantiles['0.1'].forEach((v) => expect(v).toBeCloseTo(42, 6));
    fc.quantiles['0.9'].forEach((v) => expect(v).toBeCloseTo(42, 6));
  });

  test('linear series: exact with undamped members, within 1% with the default (damped-trend ETS included)', () => {
    const y = Array.from({ length: 30 }, (_, t) => 5 + 2 * t);
    const s = one(dailyRows(y));
    const exact = forecastSeries(s, { horizon: 10, members: ['ets', 'theta', 'arima'] });
    exact.mean.forEach((v, k) => expect(Math.abs(v - (5 + 2 * (30 + k)))).toBeLessThan(0.1));
    const fc = forecastSeries(s, { horizon: 10 });
    fc.mean.forEach((v, k) => expect(Math.abs(v / (5 + 2 * (30 + k)) - 1)).toBeLessThan(0.01));
  });

  test('a series of tiny values is forecast as its twin at scale 1, not as a constant (a tenth probe: 1e-15…2e-14 got a flat forecast, quantiles of zero width)', () => {
    // values in [1, 2), and the same values times 2^-50 (about 1e-15), 2^-1000 and 2^-1070 (subnormal)
    const y = Array.from({ length: 30 }, (_, t) => (16 + t + (t % 3)) / 32);
    const twin = forecastSeries(one(dailyRows(y)), { horizon: 4, quantiles: [0.1, 0.9] });
    const expectedBacktest = backtestSeries(one(dailyRows(y)), { horizon: 3 });
    for (const power of [-50, -1000]) {
      const scale = 2 ** power;
      const tiny = forecastSeries(one(dailyRows(y.map((v) => v * scale))), { horizon: 4, quantiles: [0.1, 0.9] });
      expect(tiny.mean).toEqual(twin.mean.map((v) => v * scale));
      expect(tiny.quantiles).toEqual({ '0.1': twin.quantiles['0.1'].map((v) => v * scale), '0.9': twin.quantiles['0.9'].map((v) => v * scale) });
      const backtest = backtestSeries(one(dailyRows(y.map((v) => v * scale))), { horizon: 3 });
      expect({ mase: backtest.mase, verdict: backtest.verdict.level }).toEqual({ mase: expectedBacktest.mase, verdict: expectedBacktest.verdict.level });
    }
    // the trend goes on, and the interval is not of zero width
    expect(twin.mean[3]).toBeGreaterThan(twin.mean[0]);
    expect(twin.quantiles['0.9'][0]).toBeGreaterThan(twin.quantiles['0.1'][0]);
    const subnormal = forecastSeries(one(dailyRows(y.map((v) => v * 2 ** -1070))), { horizon: 4 });
    subnormal.mean.forEach((v) => expect(Number.isFinite(v) && v > 0).toBe(true));
  });

  test('purely seasonal series (season 12, monthly)', () => {
    const y = Array.from({ length: 60 }, (_, t) => 50 + PATTERN[t % 12]);
    const fc = forecastSeries(one(monthlyRows(y)), { horizon: 24 });
    expect(fc.seasonal).toBe(true);
    fc.mean.forEach((v, k) => expect(Math.abs(v - (50 + PATTERN[(60 + k) % 12]))).toBeLessThan(0.05));
  });
});

describe('quantiles', () => {
  const series = one(monthlyRows(noisySeasonal(72, 21)));

  test('monotone across levels, median equal to the 0.5 quantile, keys as given', () => {
    const qs = [0.9, 0.05, 0.5, 0.25, 0.75, 0.1];
    const fc = forecastSeries(series, { horizon: 12, quantiles: qs });
    expect(Object.keys(fc.quantiles).sort()).toEqual(qs.map(String).sort());
    const sorted = qs.slice().sort((a, b) => a - b);
    for (let k = 0; k < 12; k++) {
      for (let i = 1; i < sorted.length; i++) {
        expect(fc.quantiles[String(sorted[i])][k]).toBeGreaterThanOrEqual(fc.quantiles[String(sorted[i - 1])][k]);
      }
      expect(fc.quantiles['0.5'][k]).toBe(fc.median[k]);
      expect(fc.quantiles['0.05'][k]).toBeLessThan(fc.quantiles['0.9'][k]);
    }
    // intervals widen with the horizon
    const width = (k: number) => fc.quantiles['0.9'][k] / fc.mean[k] - fc.quantiles['0.1'][k] / fc.mean[k];
    expect(width(11)).toBeGreaterThan(width(0));
  });

  test('the median equals the mean for a symmetric combination (every member in the point forecast), and quantile formatting is preserved', () => {
    // since 1.4.0 the monthly default keeps damped-trend ETS out of its point forecast (combine.test.ts)
    const fc = forecastSeries(series, { horizon: 3, quantiles: [0.1, 0.5], members: ['ets_damped', 'ets_temporal', 'theta', 'arima_temporal'] });
    expect(Object.keys(fc.quantiles)).toEqual(['0.1', '0.5']);
    fc.median.forEach((v, k) => expect(v).toBeCloseTo(fc.mean[k], 8));
  });

  test('invalid quantiles and horizons are refused', () => {
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return (e as SeriesError).code;
      }
      return null;
    };
    expect(code(() => forecastSeries(series, { horizon: 3, quantiles: [0] }))).toBe('QUANTILE_INVALID');
    expect(code(() => forecastSeries(series, { horizon: 3, quantiles: [1.2] }))).toBe('QUANTILE_INVALID');
    expect(code(() => forecastSeries(series, { horizon: 0 }))).toBe('HORIZON_INVALID');
    expect(code(() => forecastSeries(series, { horizon: 1001 }))).toBe('HORIZON_INVALID');
    expect(code(() => forecastSeries(series, { horizon: 2.5 }))).toBe('HORIZON_INVALID');
  });
});

describe('several series', () => {
  test('grouping by an id column gives the same values as one series at a time, in any row order', () => {
    const a = monthlyRows(noisySeasonal(48, 31), { item: 'a' });
    const b = monthlyRows(Array.from({ length: 36 }, (_, t) => 500 - 3 * t + 10 * Math.sin(t)), { item: 'b' });
    const c = monthlyRows(noisySeasonal(60, 32).map((v) => v * 3), { item: 'c' });
    const opts = { horizon: 8, quantiles: [0.1, 0.5, 0.9] };
    const alone = [a, b, c].map((rows) => forecastSeries(prepareSeries(rows, { target: 'value', timestamp: 'date' })[0], opts));
    // interleave and shuffle deterministically
    const mixed = [...c, ...a, ...b].map((r, i) => ({ r, k: (i * 7919) % 1009 })).sort((x, y) => x.k - y.k).map((x) => x.r);
    const grouped = prepareSeries(mixed, { target: 'value', timestamp: 'date', itemId: 'item' });
    expect(grouped.map((s) => s.id).sort()).toEqual(['a', 'b', 'c']);
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      const g = forecastSeries(grouped.find((s) => s.id === id)!, opts);
      expect(g.mean).toEqual(alone[i].mean);
      expect(g.quantiles).toEqual(alone[i].quantiles);
      expect(g.timestamps).toEqual(alone[i].timestamps);
      expect(g.id).toBe(id);
    }
  });

  test('deterministic: the same call twice gives identical results', () => {
    const s = one(monthlyRows(noisySeasonal(50, 41)));
    expect(forecastSeries(s, { horizon: 5, quantiles: [0.2] })).toEqual(forecastSeries(s, { horizon: 5, quantiles: [0.2] }));
  });

  test('seasonLength 1 disables seasonality', () => {
    const y = Array.from({ length: 60 }, (_, t) => 50 + PATTERN[t % 12]);
    const fc = forecastSeries(one(monthlyRows(y)), { horizon: 12, seasonLength: 1 });
    expect(fc.seasonal).toBe(false);
  });
});
