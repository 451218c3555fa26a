import { forecastSeries, prepareSeries, backtestSeries } from '../../../engines/forecast';
import type { Row } from '../../../engines/forecast';
import { autoForecast, combineForecasts, defaultCombine, defaultMembers, defaultPointMembers, defaultQuantileMembers, memberForecasts, pointMembersFor, QUARTERLY_SEASONAL_ETS_MIN_LENGTH, quantileMembersFor, quarterlySeasonalEts } from '../../../engines/forecast/auto';
import type { Member } from '../../../engines/forecast';
import { qnorm } from '../../../engines/forecast/math';
import { monthlyRows, normals } from './helpers';

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

  test('median combination (1.5.0): quantiles normal around the median with the spread of the members\' mixture about it', () => {
    const forecasts = [
      { mean: [10, 20], sd: [1, 2] },
      { mean: [12, 18], sd: [3, 1] },
      { mean: [11, 25], sd: [2, 2] },
      { mean: [30, 21], sd: [8, 4] },
    ];
    const taus = [0.1, 0.5, 0.9];
    const c = combineForecasts(forecasts, taus, 'median');
    expect(c.mean).toEqual([11.5, 20.5]);
    // the 0.5 quantile is the point forecast exactly
    expect(c.quantiles[1]).toEqual(c.mean);
    const z = qnorm(0.9);
    c.mean.forEach((p, k) => {
      const s = Math.sqrt(forecasts.reduce((a, f) => a + f.sd[k] ** 2 + (f.mean[k] - p) ** 2, 0) / forecasts.length);
      expect(c.quantiles[2][k]).toBeCloseTo(p + z * s, 8);
      expect(c.quantiles[0][k]).toBeCloseTo(p - z * s, 8);
    });
    // wider than 1.4.0's median of the members' quantiles, which dropped the widest member's spread
    const memberQ = (tau: number, k: number) => forecasts.map((f) => f.mean[k] + (tau < 0.5 ? -z : z) * f.sd[k]).sort((a, b) => a - b);
    for (let k = 0; k < 2; k++) {
      const hi = memberQ(0.9, k), lo = memberQ(0.1, k);
      expect(c.quantiles[2][k]).toBeGreaterThan((hi[1] + hi[2]) / 2);
      expect(c.quantiles[0][k]).toBeLessThan((lo[1] + lo[2]) / 2);
    }
    // one member: its own normal quantiles, unchanged
    const one = combineForecasts([forecasts[3]], taus, 'median');
    expect(one.quantiles).toEqual([[30 - z * 8, 21 - z * 4], [30, 21], [30 + z * 8, 21 + z * 4]].map((q) => q.map((v) => expect.closeTo(v, 10))));
    // positive data: log-normal with the point forecast as median and σ² = ln(1 + s²/point²)
    const pos = combineForecasts(forecasts, taus, 'median', true);
    expect(pos.mean).toEqual(c.mean);
    expect(pos.quantiles[1]).toEqual(c.mean);
    c.mean.forEach((p, k) => {
      const s = (c.quantiles[2][k] - p) / z;
      const sigma = Math.sqrt(Math.log(1 + (s / p) ** 2));
      expect(pos.quantiles[2][k]).toBeCloseTo(p * Math.exp(z * sigma), 8);
      expect(pos.quantiles[0][k]).toBeCloseTo(p * Math.exp(-z * sigma), 8);
      // right-skewed: further above the median than below it
      expect(pos.quantiles[2][k] - p).toBeGreaterThan(p - pos.quantiles[0][k]);
    });
    // a step whose point forecast is not above zero stays normal
    const neg = combineForecasts([{ mean: [-1], sd: [2] }, { mean: [1], sd: [2] }], taus, 'median', true);
    expect(neg.quantiles[2][0]).toBeCloseTo(z * Math.sqrt(5), 10);
    // the mean combination keeps the mean of the members' quantiles
    const m = combineForecasts(forecasts, taus, 'mean');
    expect(m.quantiles[2][0]).toBeCloseTo(forecasts.reduce((a, f) => a + f.mean[0] + z * f.sd[0], 0) / 4, 10);
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

describe('monthly point forecast without damped-trend ETS (1.4.0)', () => {
  const MONTHLY: Member[] = ['ets_damped', 'ets_temporal', 'theta', 'arima_temporal'];
  const POINT: Member[] = ['ets_temporal', 'theta', 'arima_temporal'];
  const PATTERN = [5, 3, 8, 12, 20, 30, 35, 32, 22, 14, 9, 6];

  function seasonalTrend(n: number, seed: number): number[] {
    const z = normals(seed);
    return Array.from({ length: n }, (_, t) => (100 + 0.8 * t) * (1 + PATTERN[t % 12] / 40) + 4 * z());
  }

  function monthly(values: number[]) {
    return prepareSeries(monthlyRows(values), { target: 'value', timestamp: 'date' })[0];
  }

  test('the point members by calendar: the three for short seasonal data, all members otherwise', () => {
    expect(defaultMembers('month', 12, 120)).toEqual(MONTHLY);
    expect(defaultPointMembers('month', 12, 120)).toEqual(POINT);
    expect(defaultPointMembers('day', 7, 200)).toEqual(POINT);
    for (const [unit, m, n] of [['year', 1, 40], ['quarter', 4, 48], ['hour', 24, 700], ['month', 1, 120], [null, 1, 50], ['week', 52, 300]] as const) {
      expect(defaultPointMembers(unit, m, n)).toBeUndefined();
    }
    // members or point members given by the caller win
    expect(pointMembersFor({ members: ['ets', 'theta'] }, 'month', 12, 120)).toBeUndefined();
    expect(pointMembersFor({ pointMembers: ['theta'] }, 'month', 12, 120)).toEqual(['theta']);
    expect(pointMembersFor({}, 'month', 12, 120)).toEqual(POINT);
  });

  test('point forecast = mean of THieF ETS, Theta and THieF ARIMA; quantiles = mean of all four members', () => {
    const y = seasonalTrend(96, 3);
    const taus = [0.1, 0.5, 0.9];
    const fc = forecastSeries(monthly(y), { horizon: 18, quantiles: taus });
    expect(fc.models).toHaveLength(4);
    const { forecasts } = memberForecasts(y, 18, { seasonLength: 12, members: MONTHLY });
    const three = combineForecasts(forecasts.slice(1), taus, 'mean');
    const four = combineForecasts(forecasts, taus, 'mean');
    fc.mean.forEach((v, k) => expect(v).toBeCloseTo(three.mean[k], 8));
    taus.forEach((t, i) => fc.quantiles[String(t)].forEach((v, k) => expect(v).toBeCloseTo(four.quantiles[i][k], 8)));
    // the 0.5 quantile is the four members' centre, not the point forecast
    fc.median.forEach((v, k) => expect(v).toBeCloseTo(four.mean[k], 8));
    expect(fc.median.some((v, k) => Math.abs(v - fc.mean[k]) > 1e-6)).toBe(true);
    // the same through autoForecast with explicit point members
    const direct = autoForecast(y, 18, taus, { seasonLength: 12, members: MONTHLY, pointMembers: POINT });
    expect(fc.mean).toEqual(direct.mean);
    // members given explicitly: every member in the point forecast, as before 1.4.0
    const all = forecastSeries(monthly(y), { horizon: 18, members: MONTHLY });
    all.mean.forEach((v, k) => expect(v).toBeCloseTo(four.mean[k], 8));
  });

  test('exact on a purely seasonal series and a constant one; quantiles monotone', () => {
    const pure = Array.from({ length: 60 }, (_, t) => 50 + PATTERN[t % 12]);
    const fc = forecastSeries(monthly(pure), { horizon: 24, quantiles: [0.1, 0.5, 0.9] });
    fc.mean.forEach((v, k) => expect(Math.abs(v - (50 + PATTERN[(60 + k) % 12]))).toBeLessThan(0.05));
    fc.median.forEach((v, k) => expect(Math.abs(v - (50 + PATTERN[(60 + k) % 12]))).toBeLessThan(0.05));
    const c = forecastSeries(monthly(new Array(36).fill(9)), { horizon: 6, quantiles: [0.1, 0.9] });
    c.mean.forEach((v) => expect(v).toBeCloseTo(9, 8));
    const noisy = forecastSeries(monthly(seasonalTrend(72, 8)), { horizon: 18, quantiles: [0.05, 0.25, 0.5, 0.75, 0.95] });
    for (let k = 0; k < 18; k++) {
      expect(noisy.quantiles['0.05'][k]).toBeLessThanOrEqual(noisy.quantiles['0.25'][k]);
      expect(noisy.quantiles['0.25'][k]).toBeLessThanOrEqual(noisy.quantiles['0.5'][k]);
      expect(noisy.quantiles['0.5'][k]).toBeLessThanOrEqual(noisy.quantiles['0.75'][k]);
      expect(noisy.quantiles['0.75'][k]).toBeLessThanOrEqual(noisy.quantiles['0.95'][k]);
    }
  });

  test('calibrated and empirical intervals keep the point members\' point forecast', () => {
    const y = seasonalTrend(60, 23);
    const plain = autoForecast(y, 6, [0.5], { seasonLength: 12, members: MONTHLY, pointMembers: POINT });
    const calibrated = autoForecast(y, 6, [0.5], { seasonLength: 12, members: MONTHLY, pointMembers: POINT, intervals: 'calibrated', origins: 2 });
    expect(calibrated.mean).toEqual(plain.mean);
    const empirical = autoForecast(y, 6, [0.5], { seasonLength: 12, members: MONTHLY, pointMembers: POINT, intervals: 'empirical', origins: 2 });
    empirical.mean.forEach((v, k) => expect(v).toBeCloseTo(plain.mean[k], 8));
    // empirical intervals are centred on the point forecast
    empirical.quantiles[0].forEach((v, k) => expect(v).toBeCloseTo(plain.mean[k], 8));
  });

  test('the backtest scores the same point forecast', () => {
    const y = seasonalTrend(84, 17);
    const bt = backtestSeries(monthly(y), { horizon: 6 });
    const train = y.slice(0, 84 - bt.windows * 6);
    const direct = autoForecast(train, 6, [0.5], { seasonLength: 12, members: MONTHLY, pointMembers: POINT });
    const test = y.slice(train.length, train.length + 6);
    let scale = 0;
    for (let t = 12; t < train.length; t++) scale += Math.abs(train[t] - train[t - 12]);
    scale /= train.length - 12;
    const mae = test.reduce((a, v, k) => a + Math.abs(v - direct.mean[k]), 0) / 6;
    expect(bt.baseline).toBe('seasonal_naive');
    expect(bt.by_window[0].mase).toBeCloseTo(mae / scale, 8);
  });
});

describe('quarterly point forecast with THieF ARIMA, quantiles without it (1.4.0)', () => {
  const QUARTERLY: Member[] = ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  const SPREAD: Member[] = ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift'];
  const PATTERN = [0.9, 1.15, 1.05, 0.9];

  function quarterly(values: number[]) {
    const rows = values.map((v, i) => ({ date: `${2000 + Math.floor(i / 4)}-${String(3 * (i % 4) + 1).padStart(2, '0')}-01`, value: v }));
    return prepareSeries(rows, { target: 'value', timestamp: 'date' })[0];
  }

  function seasonalTrend(n: number, seed: number): number[] {
    const z = normals(seed);
    return Array.from({ length: n }, (_, t) => (200 + 2 * t) * PATTERN[t % 4] + 6 * z());
  }

  test('members and quantile members by calendar', () => {
    expect(defaultMembers('quarter', 4, 48)).toEqual(QUARTERLY);
    expect(defaultQuantileMembers('quarter')).toEqual(SPREAD);
    expect(defaultQuantileMembers('quarter', 48)).toEqual(SPREAD);
    expect(defaultPointMembers('quarter', 4, 48)).toBeUndefined();
    for (const unit of ['year', 'month', 'day', 'hour', null] as const) expect(defaultQuantileMembers(unit)).toBeUndefined();
    expect(quantileMembersFor({ members: ['ets', 'theta'] }, 'quarter')).toBeUndefined();
    expect(quantileMembersFor({ quantileMembers: ['theta'] }, 'quarter')).toEqual(['theta']);
    expect(quantileMembersFor({}, 'quarter')).toEqual(SPREAD);
  });

  test('point forecast = mean of all six members; quantiles = mean of the five without THieF ARIMA', () => {
    const y = seasonalTrend(48, 4);
    const taus = [0.1, 0.5, 0.9];
    const fc = forecastSeries(quarterly(y), { horizon: 8, quantiles: taus });
    expect(fc.models).toHaveLength(6);
    expect(fc.models[5]).toMatch(/^THieF ARIMA/);
    const { forecasts } = memberForecasts(y, 8, { seasonLength: 4, members: QUARTERLY });
    const six = combineForecasts(forecasts, taus, 'mean');
    const five = combineForecasts(forecasts.slice(0, 5), taus, 'mean');
    fc.mean.forEach((v, k) => expect(v).toBeCloseTo(six.mean[k], 8));
    taus.forEach((t, i) => fc.quantiles[String(t)].forEach((v, k) => expect(v).toBeCloseTo(five.quantiles[i][k], 8)));
    fc.median.forEach((v, k) => expect(v).toBeCloseTo(five.mean[k], 8));
    const direct = autoForecast(y, 8, taus, { seasonLength: 4, members: QUARTERLY, quantileMembers: SPREAD });
    expect(fc.mean).toEqual(direct.mean);
    // quantiles monotone; exact on a purely seasonal series
    for (let k = 0; k < 8; k++) expect(fc.quantiles['0.1'][k]).toBeLessThanOrEqual(fc.quantiles['0.9'][k]);
    const pure = Array.from({ length: 40 }, (_, t) => 100 * PATTERN[t % 4]);
    const exact = forecastSeries(quarterly(pure), { horizon: 8, quantiles: [0.5] });
    exact.mean.forEach((v, k) => expect(Math.abs(v - 100 * PATTERN[(40 + k) % 4])).toBeLessThan(0.05));
  });
});

describe('long quarterly histories: seasonal ETS in place of the decomposition ETS (1.7.0)', () => {
  const SHORT: Member[] = ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  const LONG: Member[] = ['ets', 'ets_seasonal', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  const LONG_POINT: Member[] = ['ets_seasonal', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  const LONG_SPREAD: Member[] = ['ets', 'ets_seasonal', 'ets_temporal', 'theta', 'drift'];
  const N = QUARTERLY_SEASONAL_ETS_MIN_LENGTH;

  function quarterly(values: number[]) {
    const rows = values.map((v, i) => ({ date: `${1960 + Math.floor(i / 4)}-${String(3 * (i % 4) + 1).padStart(2, '0')}-01`, value: v }));
    return prepareSeries(rows, { target: 'value', timestamp: 'date' })[0];
  }

  /** a seasonal pattern that drifts: the first and third quarters trade places over the history */
  function driftingSeason(n: number, seed: number): number[] {
    const z = normals(seed);
    return Array.from({ length: n }, (_, t) => {
      const w = t / n;
      const pattern = [0.85 + 0.3 * w, 1.1, 1.15 - 0.3 * w, 0.9];
      return (300 + t) * pattern[t % 4] + 4 * z();
    });
  }

  test('the gate: 14 years of quarters, quarterly data only', () => {
    expect(N).toBe(56);
    expect(quarterlySeasonalEts('quarter', N - 1)).toBe(false);
    expect(quarterlySeasonalEts('quarter', N)).toBe(true);
    for (const unit of ['year', 'month', 'week', 'day', 'hour', null] as const) expect(quarterlySeasonalEts(unit, 400)).toBe(false);
    expect(defaultMembers('quarter', 4, N - 1)).toEqual(SHORT);
    expect(defaultPointMembers('quarter', 4, N - 1)).toBeUndefined();
    expect(defaultQuantileMembers('quarter', N - 1)).toEqual(['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift']);
    expect(defaultMembers('quarter', 4, N)).toEqual(LONG);
    expect(defaultPointMembers('quarter', 4, N)).toEqual(LONG_POINT);
    expect(defaultQuantileMembers('quarter', N)).toEqual(LONG_SPREAD);
    expect(quantileMembersFor({}, 'quarter', N)).toEqual(LONG_SPREAD);
    expect(pointMembersFor({}, 'quarter', 4, N)).toEqual(LONG_POINT);
    // members given by a caller: every member in the point forecast and the quantiles, as before
    expect(quantileMembersFor({ members: SHORT }, 'quarter', N)).toBeUndefined();
    expect(pointMembersFor({ members: SHORT }, 'quarter', 4, N)).toBeUndefined();
    // other calendars do not look at the length
    expect(defaultMembers('year', 1, 200)).toEqual(['ets', 'theta', 'arima', 'drift']);
    expect(defaultQuantileMembers('month', 200)).toBeUndefined();
  });

  test('a long history is forecast by the new members; one quarter shorter, by 1.6\'s', () => {
    const y = driftingSeason(N + 8, 21);
    const taus = [0.1, 0.5, 0.9];
    const fc = forecastSeries(quarterly(y), { horizon: 8, quantiles: taus });
    expect(fc.seasonal).toBe(true);
    const direct = autoForecast(y, 8, taus, { seasonLength: 4, members: LONG, pointMembers: LONG_POINT, quantileMembers: LONG_SPREAD });
    expect(fc.mean).toEqual(direct.mean);
    taus.forEach((t, i) => expect(fc.quantiles[String(t)]).toEqual(direct.quantiles[i]));
    const { forecasts } = memberForecasts(y, 8, { seasonLength: 4, members: LONG });
    const point = combineForecasts(forecasts.slice(1), taus, 'mean');
    fc.mean.forEach((v, k) => expect(v).toBeCloseTo(point.mean[k], 8));
    // seasonal ETS fits its seasonal states itself: a seasonal model on the raw series
    expect(fc.models[1]).toMatch(/^ETS\([AM],[^,]+,[AM]\)$/);

    const cut = y.slice(0, N - 1);
    const old = forecastSeries(quarterly(cut), { horizon: 8, quantiles: taus });
    const before = autoForecast(cut, 8, taus, { seasonLength: 4, members: SHORT, quantileMembers: ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift'] });
    expect(old.mean).toEqual(before.mean);
    expect(old.models).toHaveLength(6);
  });
});
