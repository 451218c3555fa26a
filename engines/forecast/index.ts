/** Public interface of the forecast engine (pure TypeScript: no I/O; safe in worker threads). */
export { SeriesError } from './errors';
export type { SeriesErrorCode } from './errors';
export { inferTimestampColumn, prepareSeries, MIN_POINTS } from './prepare';
export type { Row, SeriesSpec, PreparedSeries } from './prepare';
export { forecastSeries, forecastMany, MAX_HORIZON, DEFAULT_INTERVALS, MAX_SEASON_LENGTH, validateSeasonLength } from './forecast';
export type { ForecastOptions, SeriesForecast } from './forecast';
export { backtestSeries } from './backtest';
export type { Backtest, BacktestOptions, BacktestWindow } from './backtest';
export { futureWithinCalendar, parseTimestamp } from './calendar';
export type { Interval, IntervalUnit, TimestampFormat, ParsedTimestamp } from './calendar';
export type { Method, Combine, SeasonalMode, Member, Intervals } from './auto';

export const FORECAST_ENGINE = {
  id: 'forecast-auto',
  version: '1.8.0',
  tasks: ['forecast'] as const,
  creditPricePerPoint: 1,
};
