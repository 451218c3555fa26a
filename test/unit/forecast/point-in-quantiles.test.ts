/**
 * forecast-auto 1.8.0: the point forecast (`mean`) lies within its own quantiles. Where the point and
 * the quantiles combine different members (here a short daily series: damped-trend ETS in the
 * quantiles only), 1.7.0 could serve a point above its own 0.9 quantile (a black-box probe).
 */
import { forecastSeries, prepareSeries } from '../../../engines/forecast';
import type { Member, SeriesForecast } from '../../../engines/forecast';
import { combineForecasts, defaultMembers, defaultPointMembers, memberForecasts, quantilesOnThePointsSide } from '../../../engines/forecast/auto';
import { canServe, findEngine } from '../../../engines/catalogue';
import { dailyRows } from './helpers';

/** two weeks of a steady daily climb (375 + 2.4 a day, noise of sd 0.8: `normals(11)`, one decimal) */
const TWO_WEEKS = [374.1, 376.7, 379.4, 380.4, 383.8, 387.5, 388.9, 392.2, 394, 395.8, 399.6, 400.7, 404.4, 406.3];
const H = 14;
const DAILY: Member[] = ['ets_damped', 'ets_temporal', 'theta', 'arima_temporal'];

function daily(values: number[]) {
  return prepareSeries(dailyRows(values), { target: 'value', timestamp: 'date' })[0];
}

/** 1.7.0's answer: the point of the point members, the quantiles of every member, nothing more */
function withoutTheRule(values: number[], taus: number[]) {
  const { forecasts } = memberForecasts(values, H, { seasonLength: 7, members: DAILY });
  const point = combineForecasts(forecasts.filter((_, i) => DAILY[i] !== 'ets_damped'), [], 'mean').mean;
  return { point, quantiles: combineForecasts(forecasts, taus, 'mean').quantiles };
}

function expectPointWithinAndMonotone(fc: SeriesForecast, levels: number[]): void {
  const sorted = [...levels].sort((a, b) => a - b);
  for (let k = 0; k < fc.mean.length; k++) {
    const column = sorted.map((t) => fc.quantiles[String(t)][k]);
    expect(column).toEqual([...column].sort((a, b) => a - b));
    sorted.forEach((t) => {
      if (t < 0.5) expect(fc.quantiles[String(t)][k]).toBeLessThanOrEqual(fc.mean[k]);
      if (t > 0.5) expect(fc.quantiles[String(t)][k]).toBeGreaterThanOrEqual(fc.mean[k]);
    });
  }
}

describe('the point forecast within its own quantiles (forecast-auto 1.8.0)', () => {
  test('the two-week daily series reproduces the violation without the rule: the point above the 0.9 quantile of the combination at several steps', () => {
    // the defaults of a daily series this short, which the test's combination copies
    expect(defaultMembers('day', 7, TWO_WEEKS.length)).toEqual(DAILY);
    expect(defaultPointMembers('day', 7, TWO_WEEKS.length)).toEqual(['ets_temporal', 'theta', 'arima_temporal']);
    const { point, quantiles } = withoutTheRule(TWO_WEEKS, [0.1, 0.9]);
    const outside = point.filter((p, k) => p < quantiles[0][k] || p > quantiles[1][k]).length;
    expect(outside).toBeGreaterThanOrEqual(4);
  });

  test('the served forecast of that series keeps its point within [q0.1, q0.9] and its quantiles monotone at every step', () => {
    const levels = [0.1, 0.25, 0.5, 0.75, 0.9];
    const fc = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: levels });
    fc.mean.forEach((p, k) => {
      expect(p).toBeGreaterThanOrEqual(fc.quantiles['0.1'][k]);
      expect(p).toBeLessThanOrEqual(fc.quantiles['0.9'][k]);
    });
    expectPointWithinAndMonotone(fc, levels);
  });

  test('only the quantiles on the wrong side of the point move, onto the point; the point, the median and every other quantile are those of the combination', () => {
    const levels = [0.1, 0.3, 0.5, 0.7, 0.9];
    const before = withoutTheRule(TWO_WEEKS, levels);
    const fc = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: levels });
    expect(fc.mean).toEqual(before.point);
    expect(fc.median).toEqual(before.quantiles[2]);
    let moved = 0;
    levels.forEach((t, i) => {
      const expected = before.quantiles[i].map((q, k) => (t < 0.5 ? Math.min(q, before.point[k]) : t > 0.5 ? Math.max(q, before.point[k]) : q));
      expect(fc.quantiles[String(t)]).toEqual(expected);
      moved += expected.filter((q, k) => q !== before.quantiles[i][k]).length;
    });
    expect(moved).toBeGreaterThan(0);
  });

  test('the rule on given numbers: a lower level above the point is lowered to it, an upper level below it raised to it, the 0.5 quantile and quantiles on their side kept', () => {
    const point = [10, 10, 10];
    const quantiles = [
      [8, 11, 12], // 0.1
      [9, 12, 13], // 0.4
      [11, 12.5, 9], // 0.5
      [12, 13, 9.5], // 0.6
      [13, 14, 9.8], // 0.9
    ];
    quantilesOnThePointsSide(point, quantiles, [0.1, 0.4, 0.5, 0.6, 0.9]);
    expect(quantiles).toEqual([
      [8, 10, 10],
      [9, 10, 10],
      [11, 12.5, 9],
      [12, 13, 10],
      [13, 14, 10],
    ]);
  });

  test('each quantile depends on its own level only: the levels asked beside it change none of its values', () => {
    const narrow = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: [0.1, 0.9] });
    const many = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: [0.02, 0.1, 0.45, 0.55, 0.9, 0.98] });
    expect(many.quantiles['0.1']).toEqual(narrow.quantiles['0.1']);
    expect(many.quantiles['0.9']).toEqual(narrow.quantiles['0.9']);
    expect(many.mean).toEqual(narrow.mean);
    // levels next to 0.5 are on the point's side too
    expectPointWithinAndMonotone(many, [0.02, 0.1, 0.45, 0.55, 0.9, 0.98]);
  });

  test('deterministic: the same series forecast twice, and grouped with another series, gives bit-identical answers', () => {
    const once = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: [0.1, 0.5, 0.9] });
    const twice = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: [0.1, 0.5, 0.9] });
    expect(twice).toEqual(once);
    const other = TWO_WEEKS.map((v, i) => v * 1.5 - i);
    const rows = [...dailyRows(other, { id: 'b' }), ...dailyRows(TWO_WEEKS, { id: 'a' })];
    const grouped = prepareSeries(rows, { target: 'value', timestamp: 'date', itemId: 'id' }).map((s) => forecastSeries(s, { horizon: H, quantiles: [0.1, 0.5, 0.9] }));
    const a = grouped.find((f) => f.id === 'a')!;
    expect([a.mean, a.median, a.quantiles]).toEqual([once.mean, once.median, once.quantiles]);
  });

  test('series whose point and quantiles combine the same members are served as before: the rule moves nothing there', () => {
    // a daily series given its members explicitly: every member in the point forecast and the quantiles
    const members: Member[] = ['ets', 'theta', 'arima'];
    const taus = [0.1, 0.3, 0.5, 0.7, 0.9];
    const fc = forecastSeries(daily(TWO_WEEKS), { horizon: H, quantiles: taus, members });
    const { forecasts } = memberForecasts(TWO_WEEKS, H, { seasonLength: 7, members });
    const plain = combineForecasts(forecasts, taus, 'mean');
    expect(fc.mean).toEqual(plain.mean);
    taus.forEach((t, i) => expect(fc.quantiles[String(t)]).toEqual(plain.quantiles[i]));
  });

  test('the catalogue: forecast-auto is at 1.8.0, the only version it serves (forecasts store no model, so none names an older one)', () => {
    const engine = findEngine('forecast-auto');
    expect(engine?.version).toBe('1.8.0');
    expect(engine?.servableVersions).toEqual(['1.8.0']);
    expect(canServe('forecast-auto', '1.8.0')).toBe(true);
    expect(canServe('forecast-auto', '1.7.0')).toBe(false);
  });
});
