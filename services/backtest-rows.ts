import { backtestSeries, SeriesError, type Backtest } from '../engines/forecast';
import { beatsBaseline } from '../engines/forecast/backtest';
import type { Row } from './datasets';
import { AppError } from './errors';
import { checkedSeries, defaultHorizonNote, seriesRefusal, type SeriesColumns } from './series-checks';

/** What a backtest asks of its rows. */
export interface BacktestRequest extends SeriesColumns {
  horizon: number;
  /** The caller sent no horizon: a refusal because of the default says so. */
  horizonDefaulted: boolean;
  seasonLength?: number;
}

/**
 * The free backtest, on an engine thread: the rows' checks and their series prepared
 * (services/series-checks.ts), each series replayed over its history windows, and the verdict. Refusals
 * are VALIDATION_ERRORs (the route's code), thrown; a series the members cannot fit is 422
 * FORECAST_FAILED, the forecast route's answer to the same body. Synchronous: the rows never leave the
 * thread that holds them.
 */
export function backtestRows(rows: Row[], request: BacktestRequest): BacktestAnswer {
  const prepared = checkedSeries(rows, request, 'VALIDATION_ERROR');
  let results: Backtest[];
  try {
    results = prepared.series.map((s) => backtestSeries(s, { horizon: request.horizon, seasonLength: request.seasonLength }));
  } catch (err) {
    if (err instanceof SeriesError) {
      const refusal = seriesRefusal(err, 'VALIDATION_ERROR');
      // the engine's TOO_SHORT names the window the horizon asks for
      if (err.code !== 'TOO_SHORT' || !request.horizonDefaulted || !/backtest window/.test(err.message)) throw refusal;
      throw new AppError(refusal.code, refusal.status, `${refusal.detail}.${defaultHorizonNote(request)}`, refusal.extra);
    }
    const detail = err instanceof Error ? err.message : String(err);
    throw new AppError('FORECAST_FAILED', 422, `The series could not be backtested: ${detail}.`);
  }
  return backtestAnswer(results, request);
}

export type BacktestAnswer = ReturnType<typeof backtestAnswer>;

/** The answer: every window's scores, the means, and one verdict (each series' own when item_id groups several). */
function backtestAnswer(results: Backtest[], request: BacktestRequest) {
  const windows = results.flatMap((r) => r.by_window.map((w) => ({ ...w, ...(request.itemId ? { item_id: r.id ?? '' } : {}) })));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const engine = windows.map((w) => w.mase);
  const naive = windows.map((w) => w.naive_mase);
  const single = results.length === 1 ? results[0] : undefined;
  const usable = single ? single.verdict.level === 'usable' : beatsBaseline(engine, naive);
  return {
    horizon: request.horizon,
    windows: windows.length,
    baseline: single?.baseline ?? (results.every((r) => r.baseline === 'naive') ? 'naive' : 'seasonal_naive'),
    mase: mean(engine),
    naive_mase: mean(naive),
    verdict: single
      ? single.verdict
      : {
          level: usable ? ('usable' as const) : ('no_signal' as const),
          message: usable
            ? `Across ${results.length} series the engine's error is consistently below the naive baseline's on the same windows.`
            : `Across ${results.length} series the engine does not beat the naive baseline on the same windows.`,
        },
    by_window: windows,
    ...(request.itemId
      ? { series: results.map((r) => ({ item_id: r.id, windows: r.windows, mase: r.mase, naive_mase: r.naive_mase, verdict: r.verdict })) }
      : {}),
  };
}
