import { forecastSeries, prepareSeries, backtestSeries } from '../../../engines/forecast';
import type { Row } from '../../../engines/forecast';
import { autoForecast, combineForecasts, defaultCombine, defaultMembers } from '../../../engines/forecast/auto';
import { normals } from './helpers';

/** Rows with yearly timestamps YYYY-01-01 from 1970. */
function yearlyRows(values: number[]): Row[] {
  return values.map((v, i) => ({ date: `${1970 + i}-01-01`, value: v }));
}

function yearly(values: number[]) {
  return prepareSeries(yearlyRows(values), { target: 'value', timestamp: 'date' })[0];
}

function noisyTrend(n: number, seed: number): number[] {
  const z = normals(seed);
  let level = 100;
  return Array.from({ length: n }, () => (level += 4 + 6 * z()));
}

describe('default combination by calendar', () => {
  test('yearly data: ETS, Theta, ARIMA and drift combined by their median; other data by the mean', () => {
    expect(defaultMembers('year')).toEqual(['ets', 'theta', 'arima', 'drift']);
    expect(defaultCombine('year')).toBe('median');
    for (const unit of ['quarter', 'month', 'day', 'hour', null] as const) expect(defaultCombine(unit)).toBe('mean');
  });

  test('a yearly series is forecast by the median of the four members, point and quantiles', () => {
    const y = noisyTrend(30, 5);
    const taus = [0.1, 0.5, 0.9];
    const fc = forecastSeries(yearly(y), { horizon: 6, quantiles: taus });
    expect(fc.models).toHaveLength(4);
    const direct = autoForecast(y, 6, taus, { seasonLength: 1, members: ['ets', 'theta', 'arima', 'drift'], combine: 'median' });
    expect(fc.mean).toEqual(direct.mean);
    taus.forEach((t, i) => expect(fc.quantiles[String(t)]).toEqual(direct.quantiles[i]));
    // the median of normal members' medians is the point forecast
    fc.median.forEach((v, k) => expect(v).toBeCloseTo(fc.mean[k], 8));
    // members given explicitly are averaged, as before
    const mean = forecastSeries(yearly(y), { horizon: 6, members: ['ets', 'theta', 'arima', 'drift'] });
    const averaged = autoForecast(y, 6, [0.5], { seasonLength: 1, members: ['ets', 'theta', 'arima', 'drift'], combine: 'mean' });
    expect(mean.mean).toEqual(averaged.mean);
  });

  test('the median of four forecasts is the mean of the two middle ones, step by step', () => {
    const f = (m: number[]) => ({ mean: m, sd: m.map(() => 1) });
    const c = combineForecasts([f([1, 10]), f([4, 0]), f([2, 3]), f([100, 5])], [0.5], 'median');
    expect(c.mean).toEqual([3, 4]);
    expect(c.quantiles[0]).toEqual([3, 4]);
  });

  test('a linear yearly series is forecast exactly; a constant one too', () => {
    const y = Array.from({ length: 25 }, (_, t) => 50 + 3 * t);
    const fc = forecastSeries(yearly(y), { horizon: 6, quantiles: [0.1, 0.9] });
    fc.mean.forEach((v, k) => expect(Math.abs(v - (50 + 3 * (25 + k)))).toBeLessThan(0.1));
    const c = forecastSeries(yearly(new Array(12).fill(7)), { horizon: 4, quantiles: [0.1, 0.9] });
    c.mean.forEach((v) => expect(v).toBeCloseTo(7, 8));
    c.quantiles['0.9'].forEach((v) => expect(v).toBeCloseTo(7, 6));
  });

  test('quantiles of the yearly median combination are monotone', () => {
    const qs = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95];
    const fc = forecastSeries(yearly(noisyTrend(20, 9)), { horizon: 6, quantiles: qs });
    for (let k = 0; k < 6; k++) for (let i = 1; i < qs.length; i++) expect(fc.quantiles[String(qs[i])][k]).toBeGreaterThanOrEqual(fc.quantiles[String(qs[i - 1])][k]);
  });

  test('the backtest scores the same default combination', () => {
    const y = noisyTrend(30, 13);
    const bt = backtestSeries(yearly(y), { horizon: 4 });
    const train = y.slice(0, 30 - bt.windows * 4);
    const direct = autoForecast(train, 4, [0.5], { seasonLength: 1, members: defaultMembers('year'), combine: 'median' });
    const test = y.slice(train.length, train.length + 4);
    let scale = 0;
    for (let t = 1; t < train.length; t++) scale += Math.abs(train[t] - train[t - 1]);
    scale /= train.length - 1;
    const mae = test.reduce((a, v, k) => a + Math.abs(v - direct.mean[k]), 0) / 4;
    expect(bt.by_window[0].mase).toBeCloseTo(mae / scale, 8);
  });
});
