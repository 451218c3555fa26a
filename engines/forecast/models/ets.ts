/**
 * ETS (exponential smoothing state space models, Hyndman et al. 2008): error A/M, trend N/A/Ad,
 * season N/A/M. Smoothing parameters and initial level/trend by maximum likelihood (Nelder–Mead),
 * initial seasonal states from a classical decomposition (or, option `seasonInit: 'ml'`, by maximum
 * likelihood too); model selection by AICc. Since 1.6.0 the filter's state updates are linear maps of
 * the previous states and its Σ log|ŷ| a running product (etsFilter), the same values within rounding,
 * and on series of 100 points or more the optimiser stops on its values alone (fitEtsSpec), which
 * moves some fits (bench/RESULTS.md, 1.6.0: 1.5.0's accuracy, issue 10's daily call 1.5 times cheaper).
 */
import { linearFit, mean, nelderMead, seasonalIndices, VALUES_STOP_MIN_POINTS } from '../math';
import { FittedModel, ForecastModel, ModelForecast } from './types';

export type ErrorType = 'A' | 'M';
export type TrendType = 'N' | 'A' | 'Ad';
export type SeasonType = 'N' | 'A' | 'M';

export interface EtsSpec {
  error: ErrorType;
  trend: TrendType;
  season: SeasonType;
}

export interface EtsParams {
  alpha: number;
  beta: number;
  gamma: number;
  phi: number;
  l0: number;
  b0: number;
  s0: number[];
}

export interface EtsRun {
  /** −2 log-likelihood up to the constant n(1 + log 2π) */
  lik: number;
  sse: number;
  /** one-step errors (empty when the filter was run with keepResiduals false) */
  residuals: number[];
  level: number;
  trend: number;
  season: number[];
  /** index into `season` of the next step's seasonal state */
  nextSeasonIdx: number;
  ok: boolean;
}

/**
 * Σ log|ŷ_t| of the multiplicative-error likelihood, as the log of a running product (1.6.0): `add`
 * multiplies |ŷ| (> 1e-10, checked before) into the product and takes its log only when the product
 * leaves [1e-200, 1e200] (a factor of 1e100 or more is logged alone), so the product never overflows or
 * underflows; one Math.log per many steps instead of one per step, the same sum within rounding
 * (about n ulps of the product's log). The optimiser's loop writes the same operations inline.
 */
class LogSum {
  private sum = 0;
  private prod = 1;
  add(a: number): void {
    if (a < 1e100) {
      this.prod *= a;
      if (this.prod > 1e200 || this.prod < 1e-200) {
        this.sum += Math.log(this.prod);
        this.prod = 1;
      }
    } else this.sum += Math.log(a);
  }
  value(): number {
    return this.sum + Math.log(this.prod);
  }
}

/**
 * Runs the ETS recursions over y with the given parameters (pure). `keepResiduals: false` (the
 * optimiser's calls, which read only the likelihood) leaves `residuals` empty.
 *
 * The level and trend updates (since 1.6.0) are written as linear maps of the previous states: with
 * c_t = y_t − s (additive or no season) or y_t / s (multiplicative season),
 *   l_t = (1 − α)·l + (1 − α)φ·b + α·c_t   (= ℓ̂ + α·r, ℓ̂ = l + φb, r = y − ŷ; r / s for a
 *   b_t = φ(1 − β)·b − β·l + β·c_t           multiplicative season)
 * the same values as ℓ̂ + α r and φ b + β r up to rounding, but with three dependent operations per step
 * between one step's states and the next instead of six (and no division among them): the filter's
 * speed is bound by that chain, not by its number of operations.
 */
export function etsFilter(y: ArrayLike<number>, spec: EtsSpec, m: number, p: EtsParams, keepResiduals = true): EtsRun {
  const n = y.length;
  let l = p.l0;
  let b = spec.trend === 'N' ? 0 : p.b0;
  const phi = spec.trend === 'Ad' ? p.phi : 1;
  const s = spec.season === 'N' ? [] : p.s0.slice();
  const residuals = keepResiduals ? new Array<number>(n) : [];
  let sse = 0, sseRel = 0;
  const logs = new LogSum();
  let ok = true;
  // the model's shape as booleans read once: this loop is most of a fit's time
  const additiveSeason = spec.season === 'A', multiplicativeSeason = spec.season === 'M';
  const multiplicativeError = spec.error === 'M';
  const { alpha, beta, gamma } = p;
  const la = 1 - alpha, lb = (1 - alpha) * phi, ba = phi * (1 - beta);
  // k: the season index t mod m, counted rather than divided
  for (let t = 0, k = 0; t < n; t++, k = k + 1 === m ? 0 : k + 1) {
    const lt1 = l + phi * b;
    let yhat = lt1;
    let si = 0;
    if (additiveSeason) {
      si = s[k];
      yhat = lt1 + si;
    } else if (multiplicativeSeason) {
      si = s[k];
      yhat = lt1 * si;
    }
    const r = y[t] - yhat;
    if (keepResiduals) residuals[t] = r;
    sse += r * r;
    if (multiplicativeError) {
      if (!(Math.abs(yhat) > 1e-10)) {
        ok = false;
        break;
      }
      const e = r / yhat;
      sseRel += e * e;
      logs.add(Math.abs(yhat));
    }
    let c = y[t];
    if (multiplicativeSeason) {
      if (!(si > 1e-10) || !(lt1 > 1e-10)) {
        ok = false;
        break;
      }
      c = y[t] / si;
      s[k] = si + (gamma * r) / lt1;
    } else if (additiveSeason) {
      c = y[t] - si;
      s[k] = si + gamma * r;
    }
    const lNext = la * l + lb * b + alpha * c;
    b = ba * b - beta * l + beta * c;
    l = lNext;
    if (multiplicativeError && !(l > 0)) {
      ok = false;
      break;
    }
  }
  let lik: number;
  if (spec.error === 'A') lik = n * Math.log(Math.max(sse, 1e-300) / n);
  else lik = n * Math.log(Math.max(sseRel, 1e-300) / n) + 2 * logs.value();
  return {
    lik: ok ? lik : Infinity,
    sse,
    residuals,
    level: l,
    trend: b,
    season: s,
    nextSeasonIdx: n % Math.max(1, m),
    ok,
  };
}

/**
 * etsFilter's likelihood alone (Infinity when the run fails), for the optimiser: the same operations in
 * the same order (LogSum written inline), with the parameters passed as numbers, the seasonal states
 * copied into a buffer reused across calls, and no result object or residual array.
 */
function etsLik(
  y: ArrayLike<number>, spec: EtsSpec, m: number,
  alpha: number, beta: number, gamma: number, phiIn: number, l0: number, b0: number, s0: ArrayLike<number>, s: Float64Array,
): number {
  const n = y.length;
  let l = l0;
  let b = spec.trend === 'N' ? 0 : b0;
  const phi = spec.trend === 'Ad' ? phiIn : 1;
  const additiveSeason = spec.season === 'A', multiplicativeSeason = spec.season === 'M';
  const multiplicativeError = spec.error === 'M';
  if (additiveSeason || multiplicativeSeason) for (let i = 0; i < m; i++) s[i] = s0[i];
  const la = 1 - alpha, lb = (1 - alpha) * phi, ba = phi * (1 - beta);
  // one loop per seasonal form, without the tests of the others: the A-error likelihood reads sse only,
  // the M-error one sseRel and the logs only
  let sse = 0, sumLog = 0, prod = 1, sseRel = 0;
  if (multiplicativeSeason) {
    for (let t = 0, k = 0; t < n; t++, k = k + 1 === m ? 0 : k + 1) {
      const lt1 = l + phi * b;
      const si = s[k];
      const yhat = lt1 * si;
      const r = y[t] - yhat;
      if (multiplicativeError) {
        if (!(Math.abs(yhat) > 1e-10)) return Infinity;
        const e = r / yhat;
        sseRel += e * e;
        const a = Math.abs(yhat);
        if (a < 1e100) {
          prod *= a;
          if (prod > 1e200 || prod < 1e-200) {
            sumLog += Math.log(prod);
            prod = 1;
          }
        } else sumLog += Math.log(a);
      } else sse += r * r;
      if (!(si > 1e-10) || !(lt1 > 1e-10)) return Infinity;
      const c = y[t] / si;
      s[k] = si + (gamma * r) / lt1;
      const lNext = la * l + lb * b + alpha * c;
      b = ba * b - beta * l + beta * c;
      l = lNext;
      if (multiplicativeError && !(l > 0)) return Infinity;
    }
  } else if (additiveSeason) {
    for (let t = 0, k = 0; t < n; t++, k = k + 1 === m ? 0 : k + 1) {
      const lt1 = l + phi * b;
      const si = s[k];
      const yhat = lt1 + si;
      const r = y[t] - yhat;
      if (multiplicativeError) {
        if (!(Math.abs(yhat) > 1e-10)) return Infinity;
        const e = r / yhat;
        sseRel += e * e;
        const a = Math.abs(yhat);
        if (a < 1e100) {
          prod *= a;
          if (prod > 1e200 || prod < 1e-200) {
            sumLog += Math.log(prod);
            prod = 1;
          }
        } else sumLog += Math.log(a);
      } else sse += r * r;
      const c = y[t] - si;
      s[k] = si + gamma * r;
      const lNext = la * l + lb * b + alpha * c;
      b = ba * b - beta * l + beta * c;
      l = lNext;
      if (multiplicativeError && !(l > 0)) return Infinity;
    }
  } else {
    for (let t = 0; t < n; t++) {
      const lt1 = l + phi * b;
      const yhat = lt1;
      const r = y[t] - yhat;
      if (multiplicativeError) {
        if (!(Math.abs(yhat) > 1e-10)) return Infinity;
        const e = r / yhat;
        sseRel += e * e;
        const a = Math.abs(yhat);
        if (a < 1e100) {
          prod *= a;
          if (prod > 1e200 || prod < 1e-200) {
            sumLog += Math.log(prod);
            prod = 1;
          }
        } else sumLog += Math.log(a);
      } else sse += r * r;
      const c = y[t];
      const lNext = la * l + lb * b + alpha * c;
      b = ba * b - beta * l + beta * c;
      l = lNext;
      if (multiplicativeError && !(l > 0)) return Infinity;
    }
  }
  if (spec.error === 'A') return n * Math.log(Math.max(sse, 1e-300) / n);
  return n * Math.log(Math.max(sseRel, 1e-300) / n) + 2 * (sumLog + Math.log(prod));
}

export function etsName(spec: EtsSpec): string {
  return `ETS(${spec.error},${spec.trend},${spec.season})`;
}

export interface EtsFit extends FittedModel {
  spec: EtsSpec;
  params: EtsParams;
  aicc: number;
  sigma: number;
}

function initialStates(y: number[], spec: EtsSpec, m: number): { l0: number; b0: number; s0: number[] } {
  let s0: number[] = [];
  let adj = y;
  if (spec.season !== 'N') {
    s0 = seasonalIndices(y, m, spec.season === 'M');
    adj = y.map((v, t) => (spec.season === 'M' ? v / s0[t % m] : v - s0[t % m]));
  }
  const k = Math.min(adj.length, Math.max(10, 2 * m));
  const head = adj.slice(0, k);
  if (spec.trend === 'N') return { l0: mean(head.slice(0, Math.max(1, Math.min(k, m > 1 ? m : 5)))), b0: 0, s0 };
  const { intercept, slope } = linearFit(head);
  return { l0: intercept - slope, b0: slope, s0 };
}

/**
 * How the initial seasonal states are set: `decompose` fixes them at the classical decomposition's
 * indices; `ml` estimates them by maximum likelihood with the other parameters (as R's forecast::ets
 * and statsforecast), starting from the decomposition, m − 1 free values and the last one given by
 * the normalisation (additive states sum to 0, multiplicative ones average 1).
 */
export type SeasonInit = 'decompose' | 'ml';

/**
 * Fits one ETS specification by maximum likelihood; null when it cannot be fitted. `valuesStop`: the
 * optimiser's values-only stop (default: y has VALUES_STOP_MIN_POINTS points or more;
 * memberForecasts decides from the history it forecasts, for its aggregated THieF levels too).
 */
export function fitEtsSpec(y: number[], spec: EtsSpec, m: number, seasonInit: SeasonInit = 'decompose', valuesStop = y.length >= VALUES_STOP_MIN_POINTS): EtsFit | null {
  const n = y.length;
  const seasonal = spec.season !== 'N';
  if (seasonal && (m < 2 || n < 2 * m + 2)) return null;
  const positive = y.every((v) => v > 0);
  if ((spec.error === 'M' || spec.season === 'M') && !positive) return null;
  const init = initialStates(y, spec, m);
  const trend = spec.trend !== 'N';
  const damped = spec.trend === 'Ad';
  const scale = Math.max(1e-8, mean(y.map(Math.abs)));
  // parameter vector: alpha, [beta], [gamma], [phi], l0/scale, [b0/scale]
  const x0: number[] = [0.5];
  const lo: number[] = [1e-4];
  const hi: number[] = [0.9999];
  if (trend) {
    x0.push(0.05);
    lo.push(1e-4);
    hi.push(0.9999);
  }
  if (seasonal) {
    x0.push(0.05);
    lo.push(1e-4);
    hi.push(0.9999);
  }
  if (damped) {
    x0.push(0.95);
    lo.push(0.8);
    hi.push(0.98);
  }
  x0.push(init.l0 / scale);
  lo.push(-Infinity);
  hi.push(Infinity);
  if (trend) {
    x0.push(init.b0 / scale);
    lo.push(-Infinity);
    hi.push(Infinity);
  }
  const nSmooth = 1 + (trend ? 1 : 0) + (seasonal ? 1 : 0) + (damped ? 1 : 0);
  const mlSeason = seasonal && seasonInit === 'ml';
  const sUnit = spec.season === 'M' ? 1 : scale;
  if (mlSeason) {
    for (let i = 0; i < m - 1; i++) {
      x0.push(init.s0[i] / sUnit);
      lo.push(spec.season === 'M' ? 1e-3 : -Infinity);
      hi.push(Infinity);
    }
  }
  const seasonFrom = (x: number[], j: number): number[] => {
    if (!mlSeason) return init.s0;
    const s0 = x.slice(j, j + m - 1).map((v) => v * sUnit);
    const sum = s0.reduce((a, b) => a + b, 0);
    s0.push(spec.season === 'M' ? m - sum : -sum);
    return s0;
  };
  const unpack = (x: number[]): EtsParams => {
    let j = 0;
    const alpha = x[j++];
    const beta = trend ? x[j++] : 0;
    const gamma = seasonal ? x[j++] : 0;
    const phi = damped ? x[j++] : 1;
    const l0 = x[j++] * scale;
    const b0 = trend ? x[j++] * scale : 0;
    return { alpha, beta, gamma, phi, l0, b0, s0: seasonFrom(x, j) };
  };
  // unpack's values without its object and, for `ml` seasons, with the states in a reused buffer
  const states = new Float64Array(Math.max(m, 1));
  const mlStates = new Float64Array(Math.max(m, 1));
  const objective = (x: number[]) => {
    let j = 0;
    const alpha = x[j++];
    const beta = trend ? x[j++] : 0;
    const gamma = seasonal ? x[j++] : 0;
    const phi = damped ? x[j++] : 1;
    const l0 = x[j++] * scale;
    const b0 = trend ? x[j++] * scale : 0;
    if (beta > alpha || gamma > 1 - alpha) return 1e300;
    let s0: ArrayLike<number> = init.s0;
    if (mlSeason) {
      let sum = 0;
      for (let i = 0; i < m - 1; i++) {
        mlStates[i] = x[j + i] * sUnit;
        sum += mlStates[i];
      }
      mlStates[m - 1] = spec.season === 'M' ? m - sum : -sum;
      s0 = mlStates;
    }
    const lik = etsLik(y, spec, m, alpha, beta, gamma, phi, l0, b0, s0, states);
    return lik === Infinity ? 1e300 : lik;
  };
  const steps = x0.map((v, i) => (i < nSmooth ? 0.1 : Math.max(0.05 * Math.abs(v), 0.01)));
  // 1.6.0, with valuesStop: stops once the simplex's −2 log-likelihoods agree within
  // 1e-6 (relative; math.ts, valuesOnly). 1.5.0 asked for values within 1e-7 and vertices within 1e-7: an
  // optimum on a bound or on the β ≤ α wall leaves flat directions whose coordinates never agree, and
  // 45 % of the daily set's seasonal fits ran to maxIter at values already settled (bench/RESULTS.md,
  // 1.6.0)
  const valuesOnly = valuesStop;
  const res = nelderMead(objective, x0, { lower: lo, upper: hi, maxIter: 120 * x0.length, tol: valuesOnly ? 1e-6 : 1e-7, valuesOnly, step: steps });
  if (!(res.fx < 1e299)) return null;
  const params = unpack(res.x);
  const run = etsFilter(y, spec, m, params);
  if (!run.ok) return null;
  // free parameters: smoothing, initial level/trend, m − 1 initial seasonal states (estimated or not, the
  // decomposition fits them to the same data), and σ
  const k = nSmooth + (trend ? 2 : 1) + (seasonal ? m - 1 : 0) + 1;
  const aic = run.lik + n * (1 + Math.log(2 * Math.PI)) + 2 * k;
  const aicc = n - k - 1 > 0 ? aic + (2 * k * (k + 1)) / (n - k - 1) : Infinity;
  const nParams = nSmooth + (trend ? 2 : 1);
  let sigma: number;
  if (spec.error === 'A') sigma = Math.sqrt(run.sse / Math.max(1, n - nParams));
  else {
    // relative errors
    let s2 = 0;
    const fitted = y.map((v, t) => v - run.residuals[t]);
    for (let t = 0; t < n; t++) s2 += (run.residuals[t] / fitted[t]) ** 2;
    sigma = Math.sqrt(s2 / Math.max(1, n - nParams));
  }
  return makeFit(spec, m, params, run, aicc, sigma);
}

function makeFit(spec: EtsSpec, m: number, params: EtsParams, run: EtsRun, aicc: number, sigma: number): EtsFit {
  const predict = (h: number): ModelForecast => {
    const phi = spec.trend === 'Ad' ? params.phi : 1;
    const meanF: number[] = [];
    const sd: number[] = [];
    let phiSum = 0;
    let cSum = 0; // Σ c_j² for j < step
    for (let k = 1; k <= h; k++) {
      phiSum += Math.pow(phi, k);
      const trendPart = spec.trend === 'N' ? 0 : (spec.trend === 'Ad' ? phiSum : k) * run.trend;
      const base = run.level + trendPart;
      let f = base;
      if (spec.season !== 'N') {
        const si = run.season[(run.nextSeasonIdx + k - 1) % m];
        f = spec.season === 'A' ? base + si : base * si;
      }
      meanF.push(f);
      // variance: class-1 formula σ²(1 + Σ_{j<k} c_j²), c_j = α + β φ_j + γ 1{j mod m = 0}
      const varFactor = 1 + cSum;
      const s = spec.error === 'A' ? sigma * Math.sqrt(varFactor) : Math.abs(f) * sigma * Math.sqrt(varFactor);
      sd.push(s);
      const phiJ = spec.trend === 'N' ? 0 : spec.trend === 'Ad' ? phiSum : k;
      const seasonal = spec.season !== 'N' && k % m === 0 ? params.gamma : 0;
      const c = params.alpha + params.beta * phiJ + seasonal;
      cSum += c * c;
    }
    return { mean: meanF, sd };
  };
  return { name: etsName(spec), residuals: run.residuals, predict, spec, params, aicc, sigma };
}

export interface AutoEtsOptions {
  seasonLength?: number;
  /** allow seasonal components (default: when seasonLength > 1) */
  seasonal?: boolean;
  /** restrict to these specs (e.g. for tests) */
  specs?: EtsSpec[];
  damped?: boolean | 'both';
  /** initial seasonal states (default `decompose`) */
  seasonInit?: SeasonInit;
  /**
   * fits already made on this same series, by spec, season length and seasonal initialisation; read
   * and filled, so that calls with overlapping candidates on one series (the ensemble's `ets` and
   * `ets_damped`) fit each spec once. A fit is a pure function of those and the series.
   */
  fitted?: Map<string, EtsFit | null>;
  /** the optimiser's values-only stop (default: from VALUES_STOP_MIN_POINTS points of y; see fitEtsSpec) */
  valuesStop?: boolean;
}

export function candidateSpecs(m: number, positive: boolean, seasonal: boolean, damped: boolean | 'both' = 'both'): EtsSpec[] {
  const errors: ErrorType[] = positive ? ['A', 'M'] : ['A'];
  const trends: TrendType[] = damped === 'both' ? ['N', 'A', 'Ad'] : damped ? ['N', 'Ad'] : ['N', 'A'];
  const seasons: SeasonType[] = seasonal && m > 1 ? (positive ? ['N', 'A', 'M'] : ['N', 'A']) : ['N'];
  const out: EtsSpec[] = [];
  for (const error of errors) {
    for (const trend of trends) {
      for (const season of seasons) {
        if (error === 'A' && season === 'M') continue; // unstable (as R's restrict = TRUE)
        out.push({ error, trend, season });
      }
    }
  }
  return out;
}

/** Fits every candidate ETS model and keeps the one with the lowest AICc. */
export function autoEts(y: number[], opts: AutoEtsOptions = {}): EtsFit {
  const m = opts.seasonLength ?? 1;
  const positive = y.every((v) => v > 0);
  const seasonal = opts.seasonal ?? m > 1;
  const specs = opts.specs ?? candidateSpecs(m, positive, seasonal, opts.damped ?? 'both');
  let best: EtsFit | null = null;
  for (const spec of specs) {
    const valuesStop = opts.valuesStop ?? y.length >= VALUES_STOP_MIN_POINTS;
    const key = `${etsName(spec)} ${m} ${opts.seasonInit ?? 'decompose'} ${valuesStop}`;
    let fit = opts.fitted?.get(key);
    if (fit === undefined) {
      fit = fitEtsSpec(y, spec, m, opts.seasonInit, valuesStop);
      opts.fitted?.set(key, fit);
    }
    if (fit && (!best || fit.aicc < best.aicc)) best = fit;
  }
  if (!best) {
    const fb = fitEtsSpec(y, { error: 'A', trend: 'N', season: 'N' }, 1, 'decompose', opts.valuesStop);
    if (!fb) throw new Error('ETS: no model could be fitted');
    best = fb;
  }
  return best;
}

export class AutoETS implements ForecastModel {
  readonly name = 'AutoETS';
  constructor(private readonly opts: AutoEtsOptions = {}) {}
  fit(y: number[]): EtsFit {
    return autoEts(y, this.opts);
  }
}
