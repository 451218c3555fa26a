import { forecastSeries, prepareSeries } from '../../../engines/forecast';
import { EnginePool } from '../../../services/engine-pool';
import { dailySeriesRows } from '../../support/datasets';

describe('engine pool: a forecast\'s series packed in parts, one per thread', () => {
  const pool = new EnginePool(2, 2);
  afterAll(() => pool.close());

  it('answers what the engine answers in-process, series for series, from a summary the API reads and parts it hands on unread', async () => {
    const rows = dailySeriesRows(7, 90);
    const packed = await pool.prepareForecast({ rows, target: 'value', timestamp: 'date', itemId: 'item' });
    // one part per thread, each holding some of the series
    expect(packed.parts).toHaveLength(2);
    expect(packed.parts.every((part) => part instanceof Uint8Array && part.byteLength > 0)).toBe(true);
    const inProcess = prepareSeries(rows, { target: 'value', timestamp: 'date', itemId: 'item' });
    expect(packed.timestampColumn).toBe('date');
    expect(packed.series).toEqual(
      inProcess.map((s) => ({ id: s.id, points: s.values.length, lastTimeMs: s.timeMs[s.timeMs.length - 1], interval: s.interval, format: s.format })),
    );
    const options = { horizon: 9, quantiles: [0.1, 0.5, 0.9] };
    const forecasts = await pool.forecastPrepared(packed, options);
    expect(forecasts).toEqual(inProcess.map((s) => forecastSeries(s, options)));
    // the parts are copied, not moved: the same packed series forecast again answer the same
    expect(await pool.forecastPrepared(packed, options)).toEqual(forecasts);
  }, 60_000);
});
