/**
 * Backtest: replays the last windows of the history with the given horizon and compares the engine's
 * MASE with the naive baseline's (seasonal naive when the series is seasonal) on the same windows.
 * Gives scores only, never forecast values.
 */
import { autoForecast, Combine, combineFor, defaultMembers, Member, Method, pointMembersFor, SeasonalMode } from './auto';
import { formatTimestamp } from './calendar';
import { SeriesError } from './errors';
import { validateHorizon, resolveSeasonLength } from './forecast';
import { seasonalityTest } from './math';
import { mase, naiveScale } from './metrics';
import { fitNaive, fitSeasonalNaive } from './models/naive';
import { MIN_POINTS, PreparedSeries } from './prepare';

export interface BacktestOptions {
  horizon: number;
  /** number of windows to replay (default 3; fewer when the history is short) */
  windows?: number;
  seasonLength?: number;
  method?: Method;
  combine?: Combine;
  seasonalMode?: SeasonalMode;
  members?: Member[];
  /** members whose combination is the point forecast (default: see defaultPointMembers) */
  pointMembers?: Member[];
}

export interface BacktestWindow {
  window: number;
  /** first and last timestamps of the replayed (held-out) part */
  start: string;
  end: string;
  mase: number;
  naive_mase: number;
}

export interface Backtest {
  id: string | null;
  horizon: number;
  windows: number;
  /** 'seasonal_naive' or 'naive' */
  baseline: 'seasonal_naive' | 'naive';
  by_window: BacktestWindow[];
  mase: number;
  naive_mase: number;
  verdict: { level: 'usable' | 'no_signal'; message: string };
}

export const DEFAULT_WINDOWS = 3;
/** the engine must beat the baseline's MASE by at least this relative margin to be `usable` */
export const USABLE_MARGIN = 0.05;

/** One-sided 95% quantiles of Student's t by degrees of freedom (1..10), then 1.7 as a bound. */
const T95 = [6.314, 2.92, 2.353, 2.132, 2.015, 1.943, 1.895, 1.86, 1.833, 1.812];

/**
 * Paired comparison over windows: the engine is `usable` when its mean MASE is at least USABLE_MARGIN
 * below the baseline's and the per-window improvements are consistent (one-sided paired t-test at 5%;
 * with a single window, a 20% lower MASE is required instead).
 */
export function beatsBaseline(engine: number[], baseline: number[]): boolean {
  const w = engine.length;
  const me = engine.reduce((a, b) => a + b, 0) / w;
  const mb = baseline.reduce((a, b) => a + b, 0) / w;
  if (!(me < (1 - USABLE_MARGIN) * mb)) return false;
  if (w === 1) return me <= 0.8 * mb;
  const d = engine.map((e, i) => baseline[i] - e);
  const md = d.reduce((a, b) => a + b, 0) / w;
  const sd = Math.sqrt(d.reduce((a, b) => a + (b - md) ** 2, 0) / (w - 1));
  if (sd === 0) return md > 0;
  const t = md / (sd / Math.sqrt(w));
  return t >= (T95[w - 2] ?? 1.7);
}

export function backtestSeries(series: PreparedSeries, options: BacktestOptions): Backtest {
  const h = validateHorizon(options.horizon, series.id);
  const wanted = options.windows ?? DEFAULT_WINDOWS;
  if (!Number.isInteger(wanted) || wanted < 1) throw new Error(`windows must be a positive integer, got ${wanted}`);
  const y = series.values;
  const n = y.length;
  const windows = Math.min(wanted, Math.floor((n - MIN_POINTS) / h));
  if (windows < 1) {
    throw new SeriesError(
      'TOO_SHORT',
      `${n} points cannot hold a backtest window of ${h} step(s) after the first ${MIN_POINTS} points`,
      series.id,
    );
  }
  const m = resolveSeasonLength(series, options.seasonLength);
  const byWindow: BacktestWindow[] = [];
  let seasonalBaseline = false;
  const fullSeasonal = m > 1 && seasonalityTest(y.slice(0, n - windows * h), m);
  for (let w = 1; w <= windows; w++) {
    const end = n - (windows - w + 1) * h;
    const train = y.slice(0, end);
    const test = y.slice(end, end + h);
    const fc = autoForecast(train, h, [0.5], {
      seasonLength: m,
      method: options.method,
      combine: combineFor(options, series.interval.unit),
      seasonalMode: options.seasonalMode,
      members: options.members ?? defaultMembers(series.interval.unit, m, series.values.length),
      pointMembers: pointMembersFor(options, series.interval.unit, m, series.values.length),
    });
    const useSeasonal = fullSeasonal && train.length > m;
    seasonalBaseline ||= useSeasonal;
    const base = useSeasonal ? fitSeasonalNaive(train, m) : fitNaive(train);
    const scale = naiveScale(train, useSeasonal ? m : 1);
    byWindow.push({
      window: w,
      start: formatTimestamp(series.timeMs[end], series.format, series.millis),
      end: formatTimestamp(series.timeMs[end + h - 1], series.format, series.millis),
      mase: mase(test, fc.mean, scale),
      naive_mase: mase(test, base.predict(h).mean, scale),
    });
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const engineMase = avg(byWindow.map((w) => w.mase));
  const naiveMase = avg(byWindow.map((w) => w.naive_mase));
  const baseline = seasonalBaseline ? 'seasonal_naive' : 'naive';
  const baseName = seasonalBaseline ? 'the seasonal naive forecast' : 'the naive (last value) forecast';
  const usable = beatsBaseline(byWindow.map((w) => w.mase), byWindow.map((w) => w.naive_mase));
  const ratio = naiveMase > 0 ? engineMase / naiveMase : engineMase === 0 ? 1 : Infinity;
  const message = usable
    ? `The forecast beats ${baseName} on the last ${windows} window(s) of ${h} step(s): MASE ${engineMase.toFixed(3)} against ${naiveMase.toFixed(3)} (${((1 - ratio) * 100).toFixed(0)}% lower error).`
    : `The forecast does not beat ${baseName} clearly and consistently (at least ${USABLE_MARGIN * 100}% lower error, significant across windows) on the last ${windows} window(s) of ${h} step(s): MASE ${engineMase.toFixed(3)} against ${naiveMase.toFixed(3)}; the series shows no pattern the engine can use beyond repeating recent values.`;
  return {
    id: series.id,
    horizon: h,
    windows,
    baseline,
    by_window: byWindow,
    mase: engineMase,
    naive_mase: naiveMase,
    verdict: { level: usable ? 'usable' : 'no_signal', message },
  };
}
