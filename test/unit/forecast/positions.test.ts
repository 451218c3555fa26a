import {
  backtestSeries,
  forecastSeries,
  inferTimestampColumn,
  parseTimestamp,
  prepareSeries,
  SeriesError,
} from '../../../engines/forecast';
import type { Row } from '../../../engines/forecast';
import { monthlyRows, normals } from './helpers';

const WEEK = [3, 9, 14, 11, 6, -4, -12];

function expectRefusal(fn: () => unknown, code: string) {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SeriesError);
    expect((e as SeriesError).code).toBe(code);
    return;
  }
  throw new Error(`expected a SeriesError ${code}`);
}

function positionRows(values: number[], first = 1, step = 1, asString = false): Row[] {
  return values.map((v, i) => ({ t: asString ? String(first + i * step) : first + i * step, value: v }));
}

const prep = (rows: Row[]) => prepareSeries(rows, { target: 'value', timestamp: 't' })[0];
const pad4 = (y: number) => String(y).padStart(4, '0');

describe('integer time positions', () => {
  test('1, 2, 3, … (numbers): no calendar, no season, the forecast continues the positions', () => {
    const y = Array.from({ length: 150 }, (_, i) => 100 + 0.5 * i + Math.sin(i));
    const s = prep(positionRows(y));
    expect(s.format).toBe('position');
    expect(s.interval.unit).toBe('position');
    expect(s.interval.step).toBe(1);
    expect(s.seasonLength).toBe(1);
    expect(s.timestamps.slice(0, 3)).toEqual(['1', '2', '3']);
    const fc = forecastSeries(s, { horizon: 3 });
    expect(fc.timestamps).toEqual(['151', '152', '153']);
    expect(fc.format).toBe('position');
    expect(fc.seasonLength).toBe(1);
    expect(fc.seasonal).toBe(false);
  });

  test('any regular integer step, as strings, negative positions included', () => {
    const y = Array.from({ length: 12 }, (_, i) => 20 + i);
    const s = prep(positionRows(y, -30, 5, true));
    expect(s.interval.step).toBe(5);
    expect(forecastSeries(s, { horizon: 3 }).timestamps).toEqual(['30', '35', '40']);
  });

  test('unsorted positions are sorted; gaps, duplicates and a mix with dates are refused', () => {
    const y = Array.from({ length: 12 }, (_, i) => i);
    expect(prep(positionRows(y).reverse()).timestamps[0]).toBe('1');
    const gap = positionRows(y);
    gap[11].t = 13;
    expectRefusal(() => prep(gap), 'IRREGULAR_INTERVAL');
    const dup = positionRows(y);
    dup[11].t = 11;
    expectRefusal(() => prep(dup), 'DUPLICATE_TIMESTAMP');
    const mixed = positionRows(y);
    mixed[3].t = '2024-01-01';
    expectRefusal(() => prep(mixed), 'UNPARSEABLE_TIMESTAMP');
    const fractional = positionRows(y);
    fractional[3].t = 4.5;
    expectRefusal(() => prep(fractional), 'UNPARSEABLE_TIMESTAMP');
  });

  test('season_length gives a position series its season; without it the same series has none', () => {
    const y = Array.from({ length: 70 }, (_, t) => 50 + WEEK[t % 7]);
    const s = prep(positionRows(y));
    const plain = forecastSeries(s, { horizon: 7 });
    expect(plain.seasonal).toBe(false);
    const seasonal = forecastSeries(s, { horizon: 14, seasonLength: 7 });
    expect(seasonal.seasonal).toBe(true);
    expect(seasonal.seasonLength).toBe(7);
    seasonal.mean.forEach((v, k) => expect(Math.abs(v - (50 + WEEK[(70 + k) % 7]))).toBeLessThan(0.05));
    // the flat forecast misses the pattern by several units somewhere
    expect(Math.max(...plain.mean.map((v, k) => Math.abs(v - (50 + WEEK[(70 + k) % 7]))))).toBeGreaterThan(5);
  });

  test('season_length is validated', () => {
    const s = prep(positionRows(Array.from({ length: 20 }, (_, i) => i * i)));
    for (const bad of [0, -1, 2.5, 1e9]) expectRefusal(() => forecastSeries(s, { horizon: 2, seasonLength: bad }), 'SEASON_LENGTH_INVALID');
    expectRefusal(() => backtestSeries(s, { horizon: 2, seasonLength: 0 }), 'SEASON_LENGTH_INVALID');
  });

  test('the backtest accepts positions and season_length (seasonal baseline only with a season)', () => {
    const z = normals(7);
    const y = Array.from({ length: 84 }, (_, t) => 200 + 4 * WEEK[t % 7] + z());
    const s = prep(positionRows(y, 1000, 1, true));
    const withSeason = backtestSeries(s, { horizon: 7, seasonLength: 7 });
    expect(withSeason.baseline).toBe('seasonal_naive');
    expect(withSeason.by_window[withSeason.windows - 1].end).toBe('1083');
    expect(withSeason.by_window[withSeason.windows - 1].start).toBe('1077');
    expect(withSeason.verdict.level).toBe('usable');
    expect(backtestSeries(s, { horizon: 7 }).baseline).toBe('naive');
  });
});

describe('dates in any year from 1 to 9999', () => {
  test('years before 100 are not read as 19xx', () => {
    expect(parseTimestamp('0001-01-01')?.ms).toBe(-62135596800000);
    expect(new Date(parseTimestamp('0099-12-31')!.ms).getUTCFullYear()).toBe(99);
    expect(new Date(parseTimestamp('0050-06')!.ms).getUTCFullYear()).toBe(50);
    expect(new Date(parseTimestamp('0012-03-04T05:06:07Z')!.ms).toISOString()).toBe('0012-03-04T05:06:07.000Z');
    // leap years of the proleptic Gregorian calendar, not those of 1904 and 1900
    expect(parseTimestamp('0004-02-29')).not.toBeNull();
    expect(parseTimestamp('0100-02-29')).toBeNull();
    expect(parseTimestamp('0003-02-29')).toBeNull();
  });

  test('a 150-point yearly series starting in year 1 is regular and forecast', () => {
    const rows = Array.from({ length: 150 }, (_, i) => ({ t: `${pad4(1 + i)}-01-01`, value: 10 + i }));
    const s = prep(rows);
    expect(s.interval.unit).toBe('year');
    expect(s.timestamps[0]).toBe('0001-01-01');
    expect(s.timestamps[149]).toBe('0150-01-01');
    expect(forecastSeries(s, { horizon: 2 }).timestamps).toEqual(['0151-01-01', '0152-01-01']);
  });

  test('monthly data across year 99 to 100 and quarterly data in year 1', () => {
    const months = Array.from({ length: 24 }, (_, i) => ({ t: `${pad4(98 + Math.floor(i / 12))}-${String((i % 12) + 1).padStart(2, '0')}`, value: i }));
    const m = prep(months);
    expect(m.interval.unit).toBe('month');
    expect(forecastSeries(m, { horizon: 2 }).timestamps).toEqual(['0100-01', '0100-02']);
    const quarters = Array.from({ length: 12 }, (_, i) => ({ t: `${pad4(1 + Math.floor(i / 4))}-${String(3 * (i % 4) + 1).padStart(2, '0')}-01`, value: i }));
    const q = prep(quarters);
    expect(q.interval.unit).toBe('quarter');
    expect(forecastSeries(q, { horizon: 1 }).timestamps).toEqual(['0004-01-01']);
  });

  test('years after 9000, up to 9999', () => {
    const rows = Array.from({ length: 24 }, (_, i) => ({ t: `${9000 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}-01`, value: i }));
    expect(forecastSeries(prep(rows), { horizon: 1 }).timestamps).toEqual(['9002-01-01']);
    expect(parseTimestamp('9999-12-31')?.ms).toBe(Date.UTC(9999, 11, 31));
    const hours = Array.from({ length: 12 }, (_, i) => ({ t: `9999-12-31T${String(i).padStart(2, '0')}:00:00Z`, value: i }));
    const h = prep(hours);
    expect(h.interval.unit).toBe('hour');
    expect(forecastSeries(h, { horizon: 2 }).timestamps).toEqual(['9999-12-31T12:00:00Z', '9999-12-31T13:00:00Z']);
  });
});

describe('calendar and position series in one request', () => {
  test('each series keeps its own form, and its forecast equals that of the series alone', () => {
    const z = normals(3);
    const a = Array.from({ length: 36 }, (_, t) => 100 + t + 10 * Math.sin((2 * Math.PI * t) / 12) + z());
    const b = Array.from({ length: 40 }, (_, t) => 50 - 0.3 * t + 2 * z());
    const rowsA = monthlyRows(a).map((r) => ({ id: 'a', t: r.date, value: r.value }));
    const rowsB = positionRows(b, 1, 1).map((r) => ({ id: 'b', ...r }));
    const both = prepareSeries([...rowsB, ...rowsA], { target: 'value', timestamp: 't', itemId: 'id' });
    expect(both.map((s) => [s.id, s.format])).toEqual([['b', 'position'], ['a', 'date']]);
    const together = both.map((s) => forecastSeries(s, { horizon: 4, quantiles: [0.1, 0.9] }));
    const alone = [rowsB, rowsA].map((r) => forecastSeries(prepareSeries(r, { target: 'value', timestamp: 't', itemId: 'id' })[0], { horizon: 4, quantiles: [0.1, 0.9] }));
    expect(together).toEqual(alone);
    expect(together[0].timestamps).toEqual(['41', '42', '43', '44']);
    expect(together[1].timestamps).toEqual(['2003-01-01', '2003-02-01', '2003-03-01', '2003-04-01']);
  });
});

describe('inferring the timestamp column', () => {
  test('a date column is preferred over integer columns', () => {
    const rows = [
      { when: '2024-01-01', store: 3, y: 1 },
      { when: '2024-01-02', store: 4, y: 2 },
    ];
    expect(inferTimestampColumn(rows, ['y'])).toBe('when');
  });
  test('without a date column, the one integer column is the positions; two are ambiguous', () => {
    expect(inferTimestampColumn([{ t: 1, y: 1.5 }, { t: 2, y: 2.5 }], ['y'])).toBe('t');
    expect(inferTimestampColumn([{ t: 1, u: 7, y: 1.5 }, { t: 2, u: 8, y: 2.5 }], ['y'])).toBeNull();
    const rows = Array.from({ length: 12 }, (_, i) => ({ step: String(i + 1), y: i * 1.5 }));
    expect(prepareSeries(rows, { target: 'y' })[0].format).toBe('position');
  });
});
