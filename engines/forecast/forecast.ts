/**
 * Runner: applies the automatic forecaster to prepared series (one at a time or many), builds future
 * timestamps on the series' calendar and the requested quantiles.
 */
import { formatTimestamp, futureTimestamps, TimestampFormat } from './calendar';
import { autoForecast, Combine, combineFor, defaultMembers, Intervals, Member, Method, pointMembersFor, quantileMembersFor, SeasonalMode } from './auto';
import { SeriesError } from './errors';
import { PreparedSeries } from './prepare';

export const MAX_HORIZON = 1000;
/** quantile calibration kept after measuring on M3 WQL (bench/RESULTS.md) */
export const DEFAULT_INTERVALS: Intervals = 'model';

export interface ForecastOptions {
  horizon: number;
  /** quantile levels in (0, 1); keys of the result are `String(q)` */
  quantiles?: number[];
  /**
   * overrides the season length from the calendar (1 disables seasonality); the only source of a
   * season for series given by integer positions (API field `season_length`)
   */
  seasonLength?: number;
  /** model choice (default: the combination of ETS, Theta and ARIMA) */
  method?: Method;
  /** how members are combined (default: see defaultCombine; `mean` when `members` are given) */
  combine?: Combine;
  seasonalMode?: SeasonalMode;
  /** members of the combination (default: see defaultMembers) */
  members?: Member[];
  /** members whose combination is the point forecast (default: see defaultPointMembers; all when `members` are given) */
  pointMembers?: Member[];
  /** members whose quantiles make the quantiles (default: see defaultQuantileMembers; all when `members` are given) */
  quantileMembers?: Member[];
  /** how quantiles are calibrated (default: see DEFAULT_INTERVALS) */
  intervals?: Intervals;
}

export interface SeriesForecast {
  id: string | null;
  /** future timestamps, in the input's format (for `format: 'position'`, the next integer positions) */
  timestamps: string[];
  /** the input's timestamp format, mirrored by `timestamps` (`position`: integer positions, no calendar) */
  format: TimestampFormat;
  mean: number[];
  /** the 0.5 quantile */
  median: number[];
  /** keyed by the quantile as given (`String(q)`) */
  quantiles: Record<string, number[]>;
  /** the models combined */
  models: string[];
  /** whether a seasonal pattern was detected and used */
  seasonal: boolean;
  seasonLength: number;
}

export function validateHorizon(horizon: unknown, seriesId: string | null = null): number {
  if (typeof horizon !== 'number' || !Number.isInteger(horizon) || horizon < 1 || horizon > MAX_HORIZON) {
    throw new SeriesError('HORIZON_INVALID', `horizon must be an integer from 1 to ${MAX_HORIZON}, got ${String(horizon)}`, seriesId);
  }
  return horizon;
}

export function validateQuantiles(quantiles: unknown): number[] {
  if (quantiles === undefined) return [];
  if (!Array.isArray(quantiles)) throw new SeriesError('QUANTILE_INVALID', 'quantiles must be a list of numbers between 0 and 1');
  for (const q of quantiles) {
    if (typeof q !== 'number' || !Number.isFinite(q) || q <= 0 || q >= 1) {
      throw new SeriesError('QUANTILE_INVALID', `quantile ${String(q)} is not a number strictly between 0 and 1`);
    }
  }
  return quantiles as number[];
}

/** Forecasts one prepared series. Deterministic: depends only on this series and the options. */
export function forecastSeries(series: PreparedSeries, options: ForecastOptions): SeriesForecast {
  const h = validateHorizon(options.horizon, series.id);
  const requested = validateQuantiles(options.quantiles);
  const taus = Array.from(new Set([...requested, 0.5])).sort((a, b) => a - b);
  const m = resolveSeasonLength(series, options.seasonLength);
  const fc = autoForecast(series.values, h, taus, {
    seasonLength: m,
    method: options.method,
    combine: combineFor(options, series.interval.unit),
    seasonalMode: options.seasonalMode,
    members: options.members ?? defaultMembers(series.interval.unit, m, series.values.length),
    pointMembers: pointMembersFor(options, series.interval.unit, m, series.values.length),
    quantileMembers: quantileMembersFor(options, series.interval.unit, series.values.length),
    intervals: options.intervals ?? DEFAULT_INTERVALS,
  });
  // monotone across levels at every step
  for (let k = 0; k < h; k++) {
    const col = fc.quantiles.map((q) => q[k]).sort((a, b) => a - b);
    col.forEach((v, i) => (fc.quantiles[i][k] = v));
  }
  const byTau = new Map<number, number[]>();
  taus.forEach((t, i) => byTau.set(t, fc.quantiles[i]));
  const median = byTau.get(0.5)!;
  const quantiles: Record<string, number[]> = {};
  for (const q of requested) quantiles[String(q)] = byTau.get(q)!.slice();
  const last = series.timeMs[series.timeMs.length - 1];
  const timestamps = futureTimestamps(last, series.interval, h).map((t) => formatTimestamp(t, series.format, series.millis));
  return {
    id: series.id,
    timestamps,
    format: series.format,
    mean: fc.mean,
    median: median.slice(),
    quantiles,
    models: fc.models,
    seasonal: fc.seasonal,
    seasonLength: m,
  };
}

/** Largest accepted `seasonLength` (generous: the seasonality test needs three seasons of history). */
export const MAX_SEASON_LENGTH = 10_000;

export function validateSeasonLength(value: unknown, seriesId: string | null = null): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SEASON_LENGTH) {
    throw new SeriesError('SEASON_LENGTH_INVALID', `season_length must be an integer from 1 to ${MAX_SEASON_LENGTH}, got ${String(value)}`, seriesId);
  }
  return value;
}

/** The season length used: the option when given (validated), else the calendar's candidate. */
export function resolveSeasonLength(series: PreparedSeries, override?: number): number {
  return validateSeasonLength(override, series.id) ?? series.seasonLength;
}

/** Forecasts many series, each from its own history only (grouping changes no value). */
export function forecastMany(series: PreparedSeries[], options: ForecastOptions): SeriesForecast[] {
  return series.map((s) => forecastSeries(s, options));
}
