/**
 * The automatic forecaster: seasonality test and classical decomposition, the chosen models fitted on
 * the seasonally adjusted series, their combination, and quantiles.
 */
import type { IntervalUnit } from './calendar';
import { isConstant, qnorm, seasonalIndices, seasonalityTest, VALUES_STOP_MIN_POINTS } from './math';
import { autoArima } from './models/arima';
import { type AutoEtsOptions, autoEts, type EtsFit } from './models/ets';
import { fitDrift, fitNaive, fitSeasonalNaive } from './models/naive';
import { autoTheta } from './models/theta';
import { FittedModel, ModelForecast, normalQuantiles } from './models/types';
import { temporalForecast } from './temporal';

export type Method = 'ensemble' | 'ets' | 'theta' | 'arima' | 'naive' | 'seasonal_naive' | 'drift';
export type Combine = 'mean' | 'median';
/** `decompose`: every model on the seasonally adjusted series; `native`: seasonal ETS and ARIMA on the raw series */
export type SeasonalMode = 'decompose' | 'native';
/**
 * `ets_seasonal` / `arima_seasonal`: fitted on the raw series with seasonal components when seasonality is
 * detected; `ets_temporal` / `arima_temporal`: temporal hierarchies (see defaultMembers)
 */
export type Member = 'ets' | 'ets_damped' | 'theta' | 'arima' | 'drift' | 'naive' | 'ets_seasonal' | 'arima_seasonal' | 'ets_temporal' | 'arima_temporal';

export interface AutoOptions {
  /** candidate season length (1 = none) */
  seasonLength: number;
  method?: Method;
  combine?: Combine;
  seasonalMode?: SeasonalMode;
  /** members of the ensemble (default ets, theta, arima) */
  members?: Member[];
  /**
   * the members whose combination is the point forecast (default: every member); the quantiles always
   * combine every member (see defaultPointMembers)
   */
  pointMembers?: Member[];
  /**
   * the members whose quantiles are combined into the quantiles (default: every member; see
   * defaultQuantileMembers)
   */
  quantileMembers?: Member[];
  /**
   * `model`: each member's model-based normal intervals, averaged quantile by quantile;
   * `calibrated`: the same, scaled by the ratio of rolling-origin errors to the model's spread;
   * `empirical`: normal intervals whose spread per step is the rolling-origin RMSE
   */
  intervals?: Intervals;
  /** number of rolling origins for `calibrated` / `empirical` intervals (default 3) */
  origins?: number;
}

export type Intervals = 'model' | 'calibrated' | 'empirical';

export interface AutoForecast {
  mean: number[];
  /** one array per requested τ (same order as `taus`) */
  quantiles: number[][];
  /** the models that were combined, e.g. ["ETS(M,Ad,N)", "Theta(DOTM)", "ARIMA(0,1,1)"] */
  models: string[];
  /** whether seasonality was detected and used */
  seasonal: boolean;
}

/**
 * Default members of the combination (bench/RESULTS.md, chosen on M1, M3 and M4 hourly together):
 * - yearly data: ETS, Theta, ARIMA and the random walk with drift, combined by their median (see
 *   defaultCombine): a simple combination of univariate models by the median (Petropoulos & Svetunkov
 *   2020, "SCUM"). In a mean, ARIMA helped M1 and hurt M3 (its M3 yearly forecasts are the worst of the
 *   four); the median of four, the mean of the two middle forecasts at every step, keeps its help on
 *   M1 (3.545 → 3.493) and ignores it where it is off the others (M3 2.569 → 2.558);
 * - quarterly data: ETS and damped-trend ETS (adjusted series), ETS through a temporal hierarchy,
 *   Theta and drift: the former set plus ETS of the adjusted series, which gained 1.2% on M1 at an
 *   equal score on M3 (without THieF ETS, M3 lost 0.7%); since 1.4.0 also ARIMA through a temporal
 *   hierarchy, in the point forecast only (defaultQuantileMembers); since 1.7.0, for a history of at
 *   least QUARTERLY_SEASONAL_ETS_MIN_LENGTH points, ETS fitted with its own seasonal states in place of
 *   damped-trend ETS (see there);
 * - other seasonal data (season 2..24) with at most NATIVE_SEASONAL_MAX_LENGTH points: damped-trend ETS
 *   and Theta (seasonally adjusted series), ETS and ARIMA through temporal hierarchies; since 1.4.0
 *   damped-trend ETS counts in the quantiles only, not in the point forecast (defaultPointMembers);
 * - longer seasonal data (season 2..24, e.g. hourly): ARIMA through the temporal hierarchy alone, fitted
 *   to the last NATIVE_SEASONAL_MAX_LENGTH points. A classical decomposition of a long history averages
 *   a seasonal pattern that drifts, and models of the adjusted series then lose to the seasonal naive
 *   forecast (M4 hourly: MASE about 2.5 against 1.2); seasonal models on a recent window follow the
 *   pattern and cost far less than on the whole history;
 * - otherwise (no season, or a season too long for seasonal models): ETS + Theta + ARIMA, on the
 *   seasonally adjusted series.
 * `ets_temporal` / `arima_temporal` (THieF, temporal.ts): the model is fitted to the raw series and to
 * its sums over every divisor of the season (e.g. 2, 3, 4, 6 and 12 months), choosing its own seasonal
 * form by AICc at every level, and the forecasts of all levels are reconciled. With season 1 they are
 * plain ETS / ARIMA.
 */
export const NATIVE_SEASONAL_MAX_LENGTH = 400;

/**
 * Quarterly histories of at least this many points (14 years, 1.7.0) are forecast with seasonal ETS
 * (`ets_seasonal`: ETS fitted to the raw series with seasonal states that it updates, when the
 * seasonality test passes) in place of the two ETS of the classically decomposed series in the point
 * forecast, and in place of damped-trend ETS in the quantiles. The decomposition's seasonal indices are
 * fixed averages over the whole history; the longer the history, the more a seasonal pattern that
 * drifts departs from them (the same reason as NATIVE_SEASONAL_MAX_LENGTH). On a held-out collection
 * (Tourism and R packages' series, 498 quarterly series) seasonal ETS wins at every length from 33
 * quarters up; on the development collections (M1, M3: histories of 8 to 106 quarters) it loses below
 * 53 quarters (M1 41-52: +0.06 to +0.10 MASE per series, M3 33-48: +0.01 to +0.02) and is level above
 * (M1 and M3 from 53 quarters: 138 series, no significant difference). The gate sits above
 * the development losses; bench/RESULTS.md (1.7.0) gives the figures for gates from 33 to 97.
 */
export const QUARTERLY_SEASONAL_ETS_MIN_LENGTH = 56;

/** Whether a quarterly history takes the seasonal-ETS members (QUARTERLY_SEASONAL_ETS_MIN_LENGTH). */
export function quarterlySeasonalEts(unit: IntervalUnit | null, length: number): boolean {
  return unit === 'quarter' && length >= QUARTERLY_SEASONAL_ETS_MIN_LENGTH;
}

export function defaultMembers(unit: IntervalUnit | null, seasonLength = 1, length = 0): Member[] {
  if (unit === 'year') return ['ets', 'theta', 'arima', 'drift'];
  if (quarterlySeasonalEts(unit, length)) return ['ets', 'ets_seasonal', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  if (unit === 'quarter') return ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  if (seasonLength > 1 && seasonLength <= 24) {
    return length <= NATIVE_SEASONAL_MAX_LENGTH ? ['ets_damped', 'ets_temporal', 'theta', 'arima_temporal'] : ['arima_temporal'];
  }
  return ['ets', 'theta', 'arima'];
}

/**
 * The default members that make the point forecast, when not all of them (undefined: all).
 * Seasonal data of at most NATIVE_SEASONAL_MAX_LENGTH points (e.g. monthly, since 1.4.0): the point
 * forecast is the mean of ETS and ARIMA through temporal hierarchies and Theta, the plain mean of ETS,
 * ARIMA and Theta of the literature (and of issue 14's tourism evidence); the quantiles stay the mean
 * of all four members' quantiles, damped-trend ETS included. Measured on every monthly series of M1 and
 * M3 (bench/RESULTS.md): without damped ETS in the point forecast MASE falls on both (M1 1.051 → 1.046,
 * M3 0.823 → 0.819); without it in the quantiles too, M1's WQL would rise 5% (0.157 → 0.165, worse than
 * statsforecast's mean of 0.159), so the quantiles keep it. The 0.5 quantile (`median`) is then the
 * four members' centre and the point forecast (`mean`) the three's.
 */
export function defaultPointMembers(unit: IntervalUnit | null, seasonLength = 1, length = 0): Member[] | undefined {
  // long quarterly histories (1.7.0): seasonal ETS, not ETS of the adjusted series, in the point forecast
  if (quarterlySeasonalEts(unit, length)) return ['ets_seasonal', 'ets_temporal', 'theta', 'drift', 'arima_temporal'];
  if (unit === 'year' || unit === 'quarter') return undefined;
  if (seasonLength > 1 && seasonLength <= 24 && length <= NATIVE_SEASONAL_MAX_LENGTH) return ['ets_temporal', 'theta', 'arima_temporal'];
  return undefined;
}

/**
 * The default members whose quantiles make the quantiles, when not all of them (undefined: all).
 * Quarterly data (since 1.4.0): every member but THieF ARIMA, i.e. 1.3.0's five. THieF ARIMA joins the
 * point forecast: MASE falls on M1 and M3 quarterly (1.575 → 1.570, 1.059 → 1.057) and on the quarterly
 * sums of M1's and M3's monthly series (1.132 → 1.120, 0.902 → 0.893); in the quantiles it would
 * raise M1's WQL (0.082 → 0.083, above statsforecast's mean) and that of M1's summed series
 * (bench/RESULTS.md), so they stay those of the five. Quarterly histories of at least
 * QUARTERLY_SEASONAL_ETS_MIN_LENGTH points (1.7.0): seasonal ETS in place of damped-trend ETS (WQL
 * lower on M1, M3 and the held-out collection than with 1.6's five or with seasonal ETS in place of
 * both decomposition ETS, which raised M1's WQL above statsforecast's mean).
 */
export function defaultQuantileMembers(unit: IntervalUnit | null, length = 0): Member[] | undefined {
  if (quarterlySeasonalEts(unit, length)) return ['ets', 'ets_seasonal', 'ets_temporal', 'theta', 'drift'];
  return unit === 'quarter' ? ['ets', 'ets_damped', 'ets_temporal', 'theta', 'drift'] : undefined;
}

/** The quantile members a call uses: its own, else (default members) the default's, else (members given) all. */
export function quantileMembersFor(options: { quantileMembers?: Member[]; members?: Member[] }, unit: IntervalUnit | null, length = 0): Member[] | undefined {
  return options.quantileMembers ?? (options.members ? undefined : defaultQuantileMembers(unit, length));
}

/** The point members a call uses: its own, else (default members) the default's, else (members given) all. */
export function pointMembersFor(options: { pointMembers?: Member[]; members?: Member[] }, unit: IntervalUnit | null, seasonLength: number, length: number): Member[] | undefined {
  return options.pointMembers ?? (options.members ? undefined : defaultPointMembers(unit, seasonLength, length));
}

/**
 * How the default members are combined: by the median for yearly data (the point forecast step by
 * step; the quantiles from the members' mixture spread about it since 1.5.0, see combineForecasts), by
 * the mean otherwise. The median lost on the other data it was
 * measured on (M1 quarterly 1.575 → 1.641, M1 monthly 1.072 → 1.080 on every 2nd series, M3 other
 * 1.788 → 1.811; bench/RESULTS.md).
 */
export function defaultCombine(unit: IntervalUnit | null): Combine {
  return unit === 'year' ? 'median' : 'mean';
}

/** The combination a call uses: its own, else the default members' default, else (members given) the mean. */
export function combineFor(options: { combine?: Combine; members?: Member[] }, unit: IntervalUnit | null): Combine {
  return options.combine ?? (options.members ? 'mean' : defaultCombine(unit));
}

interface Adjustment {
  kind: 'none' | 'multiplicative' | 'additive';
  indices: number[];
  m: number;
}

/** Seasonality test, then classical decomposition (multiplicative for positive data). */
export function seasonalAdjustment(y: number[], m: number): Adjustment {
  if (m < 2 || !seasonalityTest(y, m)) return { kind: 'none', indices: [], m: 1 };
  const positive = y.every((v) => v > 0);
  if (positive) {
    const idx = seasonalIndices(y, m, true);
    if (idx.every((v) => v >= 0.01)) return { kind: 'multiplicative', indices: idx, m };
  }
  return { kind: 'additive', indices: seasonalIndices(y, m, false), m };
}

function adjust(y: number[], a: Adjustment): number[] {
  if (a.kind === 'none') return y;
  return y.map((v, t) => (a.kind === 'multiplicative' ? v / a.indices[t % a.m] : v - a.indices[t % a.m]));
}

function reseasonalize(fc: ModelForecast, n: number, a: Adjustment): ModelForecast {
  if (a.kind === 'none') return fc;
  const s = (k: number) => a.indices[(n + k) % a.m];
  if (a.kind === 'multiplicative') {
    return { mean: fc.mean.map((v, k) => v * s(k)), sd: fc.sd.map((v, k) => v * s(k)) };
  }
  return { mean: fc.mean.map((v, k) => v + s(k)), sd: fc.sd.slice() };
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const k = s.length;
  return k % 2 ? s[(k - 1) / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

/** Fits the members on y (season length m) and returns their forecasts on the original scale. */
export function memberForecasts(y: number[], h: number, opts: AutoOptions): { fits: FittedModel[]; forecasts: ModelForecast[]; seasonal: boolean } {
  const m = opts.seasonLength;
  const method = opts.method ?? 'ensemble';
  const n = y.length;
  if (method === 'naive') {
    const f = fitNaive(y);
    return { fits: [f], forecasts: [f.predict(h)], seasonal: false };
  }
  if (method === 'seasonal_naive') {
    const f = fitSeasonalNaive(y, m);
    return { fits: [f], forecasts: [f.predict(h)], seasonal: m > 1 };
  }
  if (method === 'drift') {
    const f = fitDrift(y);
    return { fits: [f], forecasts: [f.predict(h)], seasonal: false };
  }
  if (isConstant(y)) {
    const f = fitNaive(y);
    const fc = f.predict(h);
    return { fits: [f], forecasts: [{ mean: fc.mean, sd: fc.sd.map(() => 0) }], seasonal: false };
  }
  const members: Member[] = method === 'ensemble' ? opts.members ?? ['ets', 'theta', 'arima'] : [method];
  const adj = seasonalAdjustment(y, m);
  const ya = adjust(y, adj);
  const native = (opts.seasonalMode ?? 'decompose') === 'native' && adj.kind !== 'none';
  const fits: FittedModel[] = [];
  const forecasts: ModelForecast[] = [];
  const done = new Map<Member, { fit: FittedModel; fc: ModelForecast }>();
  // ETS fits per series: `ets` and `ets_damped` share their undamped candidates on the adjusted series
  const etsFitted = new Map<number[], Map<string, EtsFit | null>>();
  // the optimisers' values-only stop (1.6.0) for histories of VALUES_STOP_MIN_POINTS points or more, on
  // every series fitted from them (THieF's aggregated levels included)
  const valuesStop = n >= VALUES_STOP_MIN_POINTS;
  const ets = (x: number[], options: AutoEtsOptions): EtsFit => {
    let fitted = etsFitted.get(x);
    if (!fitted) etsFitted.set(x, (fitted = new Map()));
    return autoEts(x, { ...options, fitted, valuesStop });
  };
  const arima = (x: number[], seasonLength: number): FittedModel => autoArima(x, { seasonLength, valuesStop });
  for (const member of members) {
    const again = done.get(member);
    if (again) {
      // a member listed twice counts twice in the combination (a weight), fitted once
      fits.push(again.fit);
      forecasts.push(again.fc);
      continue;
    }
    let fit: FittedModel;
    let useAdj = true;
    // set by members whose forecast is not their fit's own prediction
    let fc: ModelForecast | null = null;
    if (member === 'ets') {
      if (native) {
        fit = ets(y, { seasonLength: m });
        useAdj = false;
      } else fit = ets(ya, { seasonLength: 1 });
    } else if (member === 'arima') {
      if (native) {
        fit = arima(y, m);
        useAdj = false;
      } else fit = arima(ya, 1);
    } else if (member === 'ets_damped') {
      fit = ets(ya, { seasonLength: 1, damped: true });
    } else if (member === 'ets_seasonal') {
      fit = adj.kind !== 'none' ? ets(y, { seasonLength: m }) : ets(ya, { seasonLength: 1 });
      useAdj = adj.kind === 'none';
    } else if (member === 'ets_temporal' || member === 'arima_temporal') {
      // the model chooses its seasonal form itself (AICc), on the raw series and on every aggregated level
      const fitAt = (x: number[], s: number): FittedModel =>
        member === 'ets_temporal' ? ets(x, { seasonLength: s }) : arima(x, s);
      // seasonal models see the recent window only (see NATIVE_SEASONAL_MAX_LENGTH)
      const yw = m > 1 && n > NATIVE_SEASONAL_MAX_LENGTH ? y.slice(n - NATIVE_SEASONAL_MAX_LENGTH) : y;
      const bottom = fitAt(yw, m);
      fc = temporalForecast(yw, m, h, (k) => bottom.predict(k), (x, s, k) => fitAt(x, s).predict(k).mean);
      fit = m > 1 ? { ...bottom, name: `THieF ${bottom.name}` } : bottom;
      useAdj = false;
    } else if (member === 'arima_seasonal') {
      fit = adj.kind !== 'none' ? arima(y, m) : arima(ya, 1);
      useAdj = adj.kind === 'none';
    } else if (member === 'drift') {
      fit = fitDrift(ya);
    } else if (member === 'naive') {
      fit = fitNaive(ya);
    } else {
      fit = autoTheta(ya, undefined, valuesStop);
    }
    fc ??= fit.predict(h);
    if (useAdj) fc = reseasonalize(fc, n, adj);
    done.set(member, { fit, fc });
    fits.push(fit);
    forecasts.push(fc);
  }
  return { fits, forecasts, seasonal: adj.kind !== 'none' };
}

/**
 * Combines member forecasts.
 * - `mean`: the point forecast is the members' mean, each quantile the mean of the members' (normal)
 *   quantiles at its level.
 * - `median` (quantiles since 1.5.0): the point forecast is the members' median, step by step. The
 *   quantiles have the spread of the members' equal mixture about it,
 *   s² = mean over members of (sd_i² + (mean_i − point)²), i.e. the expected squared error of the point
 *   forecast if the outcome follows one of the members, each as likely; their law is normal around the
 *   point forecast, or, for `positive` data (a history without a value ≤ 0) at a step whose point
 *   forecast is above zero, log-normal with the point forecast as its median and
 *   σ² = ln(1 + s²/point²) (right-skewed, never below zero). The 0.5 quantile is the point forecast.
 *   1.3.0 / 1.4.0 took the median of the members' quantiles level by level, which keeps the two middle
 *   members' spreads only (the widest member's uncertainty and the members' disagreement were dropped):
 *   on yearly data its 0.9 quantile covered 62% of M1's and 81% of M3's test values and its 0.1 quantile
 *   10% and 15% (bench/RESULTS.md, 1.5.0).
 */
export function combineForecasts(forecasts: ModelForecast[], taus: number[], combine: Combine, positive = false): { mean: number[]; quantiles: number[][] } {
  const h = forecasts[0].mean.length;
  if (combine === 'median') {
    const point = Array.from({ length: h }, (_, k) => median(forecasts.map((f) => f.mean[k])));
    const spread = point.map((p, k) => {
      let s = 0;
      for (const f of forecasts) s += f.sd[k] * f.sd[k] + (f.mean[k] - p) * (f.mean[k] - p);
      return Math.sqrt(s / forecasts.length);
    });
    const quantiles = taus.map((tau) => {
      const z = qnorm(tau);
      return point.map((p, k) => {
        if (tau === 0.5) return p;
        if (positive && p > 0) return p * Math.exp(z * Math.sqrt(Math.log1p((spread[k] / p) * (spread[k] / p))));
        return p + z * spread[k];
      });
    });
    return { mean: point, quantiles };
  }
  const mq = forecasts.map((f) => normalQuantiles(f, taus));
  const agg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const meanF = Array.from({ length: h }, (_, k) => agg(forecasts.map((f) => f.mean[k])));
  const quantiles = taus.map((_, i) => Array.from({ length: h }, (_, k) => agg(mq.map((q) => q[i][k]))));
  return { mean: meanF, quantiles };
}

/**
 * Rolling-origin errors of the combined forecast on the series' own history: origins n−h, n−h−1, …
 * (at most `origins`, each with at least `minTrain` points); each origin refits every member.
 */
export function rollingOriginErrors(y: number[], h: number, opts: AutoOptions, origins: number, minTrain = 10): { errors: number[][]; sds: number[][] } {
  const errors: number[][] = [];
  const sds: number[][] = [];
  for (let j = 0; j < origins; j++) {
    const o = y.length - h - j;
    if (o < minTrain) break;
    const { forecasts } = memberForecasts(y.slice(0, o), h, opts);
    const k = forecasts.length;
    const point = memberSubset(forecasts, opts.pointMembers, opts);
    const mean = point ? combineForecasts(point, [], 'mean').mean : Array.from({ length: h }, (_, i) => forecasts.reduce((a, f) => a + f.mean[i], 0) / k);
    const spread = memberSubset(forecasts, opts.quantileMembers, opts) ?? forecasts;
    const sd = Array.from({ length: h }, (_, i) => spread.reduce((a, f) => a + f.sd[i], 0) / spread.length);
    errors.push(mean.map((m, i) => y[o + i] - m));
    sds.push(sd);
  }
  return { errors, sds };
}

/**
 * The member forecasts of the members named (`pointMembers` or `quantileMembers`) when they are a
 * proper, non-empty part of the ensemble's members (null otherwise: every member). Forecasts are in the
 * members' order, a member listed twice twice.
 */
function memberSubset<T>(forecasts: T[], names: Member[] | undefined, opts: AutoOptions): T[] | null {
  if (!names || (opts.method ?? 'ensemble') !== 'ensemble') return null;
  const members = opts.members ?? ['ets', 'theta', 'arima'];
  // a constant series is forecast by the naive model alone
  if (forecasts.length !== members.length) return null;
  const part = forecasts.filter((_, i) => names.includes(members[i]));
  return part.length > 0 && part.length < forecasts.length ? part : null;
}

/**
 * Below this magnitude a series is forecast at a larger scale (1.6.1): the models' tolerances are
 * partly absolute (isConstant's range of 1e-10 for values below 1, ETS's |ŷ| > 1e-10), so a series whose
 * every value lies below about 1e-10 was taken for constant (a tenth probe's linear series of
 * 1e-15…2e-14 got a flat forecast with quantiles of zero width) and smaller ones drifted from their
 * scaled twins. The factor is a power of two, exact in floating point; series at or above this
 * magnitude are forecast exactly as before.
 */
const TINY_SERIES_MAGNITUDE = 2 ** -20;

/** Forecasts y for h steps with quantiles at `taus`. */
export function autoForecast(y: number[], h: number, taus: number[], opts: AutoOptions): AutoForecast {
  let magnitude = 0;
  for (const v of y) magnitude = Math.max(magnitude, Math.abs(v));
  if (magnitude > 0 && magnitude < TINY_SERIES_MAGNITUDE) {
    // 2^k brings the largest |value| into [1, 2), in two factors (k reaches 1074, 2^1024 is Infinity);
    // scaled back by the same powers afterwards
    const k = -Math.floor(Math.log2(magnitude));
    const [a, b] = [2 ** Math.min(k, 1000), 2 ** Math.max(0, k - 1000)];
    const fc = forecastAtScale(y.map((v) => v * a * b), h, taus, opts);
    const down = (v: number) => v / b / a;
    return { ...fc, mean: fc.mean.map(down), quantiles: fc.quantiles.map((q) => q.map(down)) };
  }
  return forecastAtScale(y, h, taus, opts);
}

function forecastAtScale(y: number[], h: number, taus: number[], opts: AutoOptions): AutoForecast {
  const { fits, forecasts, seasonal } = memberForecasts(y, h, opts);
  const intervals = opts.intervals ?? 'model';
  let members = forecasts;
  if (intervals !== 'model' && !(forecasts.every((f) => f.sd.every((s) => s === 0)))) {
    const { errors, sds } = rollingOriginErrors(y, h, opts, opts.origins ?? 3);
    if (errors.length > 0) {
      if (intervals === 'calibrated') {
        let s = 0, c = 0;
        errors.forEach((e, j) => e.forEach((v, i) => {
          if (sds[j][i] > 0) {
            s += (v / sds[j][i]) ** 2;
            c++;
          }
        }));
        const factor = c ? Math.min(4, Math.max(0.5, Math.sqrt(s / c))) : 1;
        members = forecasts.map((f) => ({ mean: f.mean, sd: f.sd.map((v) => v * factor) }));
      } else {
        // empirical: per-step root mean square error, non-decreasing with the horizon
        let run = 0;
        const sd = Array.from({ length: h }, (_, i) => {
          const v = Math.sqrt(errors.reduce((a, e) => a + e[i] * e[i], 0) / errors.length);
          run = Math.max(run, v);
          return run;
        });
        // centred on the point forecast (the point members' combination, when given)
        const point = memberSubset(forecasts, opts.pointMembers, opts) ?? forecasts;
        const mean = combineForecasts(point, [], opts.combine === 'median' ? 'median' : 'mean').mean;
        members = [{ mean, sd }];
      }
    }
  }
  const combine = opts.combine ?? 'mean';
  // the quantiles of the quantile members (empirical intervals: one law around the point forecast)
  const spread = intervals === 'empirical' ? null : memberSubset(members, opts.quantileMembers, opts);
  const { mean: all, quantiles } = combineForecasts(spread ?? members, taus, combine, y.every((v) => v > 0));
  // the point forecast of the point members (their means, which calibration leaves unchanged)
  const point = intervals === 'empirical' ? null : memberSubset(forecasts, opts.pointMembers, opts);
  const mean = point ? combineForecasts(point, [], combine).mean : spread ? combineForecasts(forecasts, [], combine).mean : all;
  // a history without negative values gives no negative forecasts or quantiles
  if (y.every((v) => v >= 0)) {
    for (let i = 0; i < mean.length; i++) mean[i] = Math.max(0, mean[i]);
    for (const q of quantiles) for (let i = 0; i < q.length; i++) q[i] = Math.max(0, q[i]);
  }
  quantilesOnThePointsSide(mean, quantiles, taus);
  return { mean, quantiles, models: fits.map((f) => f.name), seasonal };
}

/**
 * Puts every quantile on its side of the point forecast (1.8.0), in place, step by step: a quantile
 * below the 0.5 level that lies above the point is lowered to the point, one above the 0.5 level that
 * lies below it is raised to it; the 0.5 quantile and every quantile already on its side are kept.
 * So the point lies between any two quantiles on either side of 0.5 (in particular within
 * [q_lowest, q_highest] of any request with levels on both sides), and quantiles that were monotone in
 * level stay monotone (min(q, point) and max(q, point) are monotone, and both sides stay on theirs of
 * the 0.5 quantile).
 *
 * Why: where the point forecast and the quantiles combine different members (quarterly: THieF ARIMA in
 * the point forecast only; seasonal series of at most NATIVE_SEASONAL_MAX_LENGTH points, e.g. monthly
 * and short daily: damped-trend ETS in the quantiles only), the point could leave the quantiles, e.g.
 * lie below its own 0.1 quantile, which users read as a broken forecast (a black-box probe on short
 * daily series). Where both combine the same members the mean of the members' normal quantiles is
 * already on its side of the members' mean, so this changes nothing there (yearly, other, long
 * seasonal series: bit-identical answers). Each quantile depends on its own level only, never on the
 * other levels requested; among rules of that kind that keep quantiles monotone and change only the
 * quantiles on the wrong side, moving them onto the point is the only one (a level just beside the
 * first one kept is arbitrarily close to the point). Shifting the whole set onto the point at every
 * step raised M1's WQL above statsforecast's (bench/RESULTS.md, 1.8.0).
 */
export function quantilesOnThePointsSide(point: number[], quantiles: number[][], taus: number[]): void {
  taus.forEach((tau, i) => {
    const q = quantiles[i];
    if (tau < 0.5) for (let k = 0; k < q.length; k++) q[k] = Math.min(q[k], point[k]);
    else if (tau > 0.5) for (let k = 0; k < q.length; k++) q[k] = Math.max(q[k], point[k]);
  });
}
