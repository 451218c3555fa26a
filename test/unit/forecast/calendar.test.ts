import { inferTimestampColumn, prepareSeries, SeriesError, forecastSeries } from '../../../engines/forecast';
import type { Row } from '../../../engines/forecast';

const values = (n: number) => Array.from({ length: n }, (_, i) => 10 + i);

function rowsFrom(ts: string[]): Row[] {
  return ts.map((t, i) => ({ ts: t, y: 100 + i }));
}

function prep(ts: string[]) {
  return prepareSeries(rowsFrom(ts), { target: 'y', timestamp: 'ts' })[0];
}

function expectRefusal(fn: () => unknown, code: string) {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SeriesError);
    expect((e as SeriesError).code).toBe(code);
    expect((e as SeriesError).message.length).toBeGreaterThan(10);
    return;
  }
  throw new Error(`expected a SeriesError ${code}`);
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

describe('interval inference', () => {
  test('minutes (15-minute steps) with a daily season', () => {
    const ts = values(12).map((_, i) => iso(Date.UTC(2024, 0, 1, 0, 15 * i)));
    const s = prep(ts);
    expect(s.interval.unit).toBe('minute');
    expect(s.interval.step).toBe(15);
    expect(s.seasonLength).toBe(96);
    expect(s.format).toBe('datetime');
  });

  test('hours with offsets are converted to UTC; season 24', () => {
    const ts = values(12).map((_, i) => `2024-03-10T${String(i + 2).padStart(2, '0')}:00:00+02:00`);
    const s = prep(ts);
    expect(s.interval.unit).toBe('hour');
    expect(s.interval.step).toBe(1);
    expect(s.seasonLength).toBe(24);
    expect(s.timestamps[0]).toBe('2024-03-10T00:00:00Z');
    const fc = forecastSeries(s, { horizon: 2 });
    expect(fc.timestamps).toEqual(['2024-03-10T12:00:00Z', '2024-03-10T13:00:00Z']);
  });

  test('RFC 3339 date-times in lower case ("t" and "z") are date-times, found without naming the column', () => {
    const rows = values(12).map((_, i) => ({ ts: `2024-03-10t${String(i).padStart(2, '0')}:00:00z`, y: 100 + i }));
    const s = prepareSeries(rows, { target: 'y' })[0]!;
    expect([s.interval.unit, s.format, s.timestamps[0]]).toEqual(['hour', 'datetime', '2024-03-10T00:00:00Z']);
  });

  test('a date-time whose zone is written UTC (BigQuery\'s CSV exports) is read as Z', () => {
    const rows = values(12).map((_, i) => ({ ts: `2024-03-10 ${String(i).padStart(2, '0')}:00:00 UTC`, y: 100 + i }));
    const s = prepareSeries(rows, { target: 'y' })[0]!;
    expect([s.interval.unit, s.format, s.timestamps[0]]).toEqual(['hour', 'datetime', '2024-03-10T00:00:00Z']);
  });

  test('days; season 7; YYYY-MM-DD in, YYYY-MM-DD out', () => {
    const ts = values(14).map((_, i) => new Date(Date.UTC(2024, 1, 20 + i)).toISOString().slice(0, 10));
    const s = prep(ts);
    expect(s.interval.unit).toBe('day');
    expect(s.seasonLength).toBe(7);
    expect(forecastSeries(s, { horizon: 3 }).timestamps).toEqual(['2024-03-05', '2024-03-06', '2024-03-07']);
  });

  test('weeks; season 52', () => {
    const ts = values(10).map((_, i) => new Date(Date.UTC(2024, 0, 1 + 7 * i)).toISOString().slice(0, 10));
    const s = prep(ts);
    expect(s.interval.unit).toBe('week');
    expect(s.seasonLength).toBe(52);
    expect(forecastSeries(s, { horizon: 1 }).timestamps).toEqual(['2024-03-11']);
  });

  test('calendar months on the first day; season 12', () => {
    const ts = values(10).map((_, i) => `2023-${String(i + 1).padStart(2, '0')}-01`);
    const s = prep(ts);
    expect(s.interval.unit).toBe('month');
    expect(s.seasonLength).toBe(12);
    expect(forecastSeries(s, { horizon: 4 }).timestamps).toEqual(['2023-11-01', '2023-12-01', '2024-01-01', '2024-02-01']);
  });

  test('month-end dates stay month ends (leap February included)', () => {
    const ends = ['2023-05-31', '2023-06-30', '2023-07-31', '2023-08-31', '2023-09-30', '2023-10-31', '2023-11-30', '2023-12-31', '2024-01-31', '2024-02-29'];
    const s = prep(ends);
    expect(s.interval.unit).toBe('month');
    expect(s.interval.anchorDay).toBe(31);
    expect(forecastSeries(s, { horizon: 3 }).timestamps).toEqual(['2024-03-31', '2024-04-30', '2024-05-31']);
  });

  test('YYYY-MM input gives YYYY-MM output', () => {
    const ts = values(11).map((_, i) => `2022-${String(((i + 2) % 12) + 1).padStart(2, '0')}`.replace(/^2022-(0[1-2])$/, '2023-$1'));
    const s = prep(ts);
    expect(s.interval.unit).toBe('month');
    expect(s.format).toBe('month');
    expect(forecastSeries(s, { horizon: 2 }).timestamps).toEqual(['2023-02', '2023-03']);
  });

  test('quarters; season 4', () => {
    const ts = values(10).map((_, i) => {
      const mi = 2019 * 12 + 3 * i;
      return `${Math.floor(mi / 12)}-${String((mi % 12) + 1).padStart(2, '0')}-01`;
    });
    const s = prep(ts);
    expect(s.interval.unit).toBe('quarter');
    expect(s.seasonLength).toBe(4);
    expect(forecastSeries(s, { horizon: 2 }).timestamps).toEqual(['2021-07-01', '2021-10-01']);
  });

  test('years; season 1', () => {
    const ts = values(12).map((_, i) => `${2000 + i}-01-01`);
    const s = prep(ts);
    expect(s.interval.unit).toBe('year');
    expect(s.seasonLength).toBe(1);
    expect(forecastSeries(s, { horizon: 1 }).timestamps).toEqual(['2012-01-01']);
  });

  test('unsorted rows are sorted by timestamp', () => {
    const ts = values(10).map((_, i) => `${2000 + i}-01-01`);
    const rows = rowsFrom(ts).reverse();
    const s = prepareSeries(rows, { target: 'y', timestamp: 'ts' })[0];
    expect(s.timestamps[0]).toBe('2000-01-01');
    expect(s.values).toEqual(values(10).map((_, i) => 100 + i));
  });
});

describe('refusals', () => {
  test('irregular interval (a gap)', () => {
    const ts = values(11).map((_, i) => new Date(Date.UTC(2024, 0, 1 + i + (i > 5 ? 1 : 0))).toISOString().slice(0, 10));
    expectRefusal(() => prep(ts), 'IRREGULAR_INTERVAL');
  });

  test('a monthly series with a missing month is refused naming that month, not the first two months of unequal length (a thirteenth probe)', () => {
    const ts = values(24)
      .map((_, i) => `${2024 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}-01`)
      .filter((t) => t !== '2024-08-01');
    expectRefusal(() => prep(ts), 'IRREGULAR_INTERVAL');
    expect(() => prep(ts)).toThrow('steps of 1 month(s) until 2024-07-01T00:00:00.000Z, then 2024-09-01T00:00:00.000Z where 2024-08-01T00:00:00.000Z was expected (at position 8 after sorting)');
    // local midnights whose offset changes with daylight saving time: the hour that moved is named
    const local = values(12).map((_, i) => `2024-${String(i + 1).padStart(2, '0')}-01T00:00:00${i >= 3 && i <= 9 ? '+02:00' : '+01:00'}`);
    expect(() => prep(local)).toThrow('then 2024-03-31T22:00:00.000Z where 2024-03-31T23:00:00.000Z was expected (at position 4 after sorting)');
  });

  test('integer positions that read as dates written YYYYMMDD say so when they are irregular (a thirteenth probe)', () => {
    const ts = values(12).map((_, i) => String(20260125 + i + (i >= 7 ? 70 - 1 : 0)));
    expect(ts.slice(5, 9)).toEqual(['20260130', '20260131', '20260201', '20260202']);
    expectRefusal(() => prep(ts), 'IRREGULAR_INTERVAL');
    expect(() => prep(ts)).toThrow(/look like dates written YYYYMMDD.*write them as YYYY-MM-DD/);
    // other irregular positions get no such hint
    expect(() => prep(values(12).map((_, i) => String(i < 6 ? i : i + 1)))).toThrow(/^(?!.*YYYYMMDD)/);
  });

  test('duplicate timestamps', () => {
    const ts = values(10).map((_, i) => `${2000 + i}-01-01`);
    ts.push('2003-01-01');
    expectRefusal(() => prep(ts), 'DUPLICATE_TIMESTAMP');
  });

  test('non-numeric target', () => {
    const rows = rowsFrom(values(12).map((_, i) => `${2000 + i}-01-01`));
    rows[4].y = 'abc';
    expectRefusal(() => prepareSeries(rows, { target: 'y', timestamp: 'ts' }), 'NON_NUMERIC_TARGET');
  });

  test('fewer than 10 points', () => {
    expectRefusal(() => prep(values(9).map((_, i) => `${2000 + i}-01-01`)), 'TOO_SHORT');
  });

  test('unparseable timestamp', () => {
    const ts = values(10).map((_, i) => `${2000 + i}-01-01`);
    ts[3] = 'yesterday';
    expectRefusal(() => prep(ts), 'UNPARSEABLE_TIMESTAMP');
  });

  test('missing target column', () => {
    expectRefusal(() => prepareSeries(rowsFrom(['2020-01-01']), { target: 'nope', timestamp: 'ts' }), 'MISSING_COLUMN');
  });

  test('the refusal names the series', () => {
    const rows: Row[] = [
      ...values(12).map((_, i) => ({ id: 'a', ts: `${2000 + i}-01-01`, y: i })),
      ...values(5).map((_, i) => ({ id: 'b', ts: `${2000 + i}-01-01`, y: i })),
    ];
    try {
      prepareSeries(rows, { target: 'y', timestamp: 'ts', itemId: 'id' });
      throw new Error('no refusal');
    } catch (e) {
      expect((e as SeriesError).code).toBe('TOO_SHORT');
      expect((e as SeriesError).seriesId).toBe('b');
    }
  });

  test('numeric strings are accepted, interior empty targets interpolated', () => {
    const rows = rowsFrom(values(12).map((_, i) => `${2000 + i}-01-01`));
    rows[2].y = '102';
    rows[5].y = null;
    const s = prepareSeries(rows, { target: 'y', timestamp: 'ts' })[0];
    expect(s.values[2]).toBe(102);
    expect(s.values[5]).toBeCloseTo(105, 10);
    expect(s.filled).toBe(1);
  });
});

describe('inferTimestampColumn', () => {
  test('finds the single date column', () => {
    const rows = [
      { when: '2024-01-01', y: 1, name: 'x' },
      { when: '2024-01-02', y: 2, name: 'z' },
    ];
    expect(inferTimestampColumn(rows, ['y'])).toBe('when');
  });
  test('null when none or ambiguous', () => {
    expect(inferTimestampColumn([{ a: 1.5, b: 'x' }], [])).toBeNull();
    expect(inferTimestampColumn([{ a: '2024-01-01', b: '2024-02-01T00:00:00Z' }], [])).toBeNull();
  });
  test('prepareSeries infers the timestamp column when omitted', () => {
    const rows = values(10).map((_, i) => ({ t: `${2000 + i}-06`, y: i }));
    expect(prepareSeries(rows, { target: 'y' })[0].interval.unit).toBe('year');
  });
});
