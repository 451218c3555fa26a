/** Numerical pieces shared by the models: pure functions on number arrays. */

export function mean(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return x.length ? s / x.length : NaN;
}

export function variance(x: ArrayLike<number>, ddof = 1): number {
  const m = mean(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) s += (x[i] - m) ** 2;
  return x.length - ddof > 0 ? s / (x.length - ddof) : NaN;
}

export function isConstant(x: ArrayLike<number>, relTol = 1e-10): boolean {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  return hi - lo <= relTol * Math.max(1, Math.abs(hi), Math.abs(lo));
}

/** Sample autocorrelations at lags 1..maxLag (biased estimator, as statsmodels' acf). */
export function acf(x: ArrayLike<number>, maxLag: number): number[] {
  const n = x.length;
  const m = mean(x);
  let c0 = 0;
  for (let i = 0; i < n; i++) c0 += (x[i] - m) ** 2;
  const r: number[] = [];
  for (let k = 1; k <= maxLag; k++) {
    let c = 0;
    for (let i = k; i < n; i++) c += (x[i] - m) * (x[i - k] - m);
    r.push(c0 > 0 ? c / c0 : 0);
  }
  return r;
}

/** Inverse of the standard normal CDF (Acklam's rational approximation, refined by one Halley step). */
export function qnorm(p: number): number {
  if (p <= 0) return -Infinity;
  if (p >= 1) return Infinity;
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const pl = 0.02425;
  let x: number;
  if (p < pl) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - pl) {
    const q = p - 0.5;
    const r = q * q;
    x = ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
      (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // one Halley refinement; below about 1e-310 (subnormal p) exp(x²/2) overflows and the step is
  // Infinity / Infinity: the approximation is kept as it is there
  const e = 0.5 * erfc(-x / Math.SQRT2) - p;
  const u = e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
  const refined = x - u / (1 + (x * u) / 2);
  return Number.isFinite(refined) ? refined : x;
}

export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? r : 2 - r;
}

export interface NelderMeadOptions {
  maxIter?: number;
  tol?: number;
  /** initial step per coordinate */
  step?: number[];
  lower?: number[];
  upper?: number[];
  /**
   * Stop as soon as the vertices' values agree within `tol` (relative: |f_worst − f_best| ≤
   * tol·(|f_best| + tol), the rule of R's optim), without also asking their coordinates to agree within
   * 1e-7 (the default, false). A likelihood flat in a direction (a smoothing parameter at its bound, a
   * trend that a tiny α leaves unused) never satisfies the coordinates' test, and such searches ran to
   * maxIter at values already settled. The price: a simplex that collapsed on a bound or on a
   * constraint wall, whose values agree while it crawls along the wall, stops there (bench/RESULTS.md,
   * 1.6.0, measures both and the polls that were tried against it).
   */
  valuesOnly?: boolean;
}

/**
 * History length from which the models' optimisers stop on their values alone (`valuesOnly`, since
 * 1.6.0): memberForecasts decides from the series it forecasts and applies the choice to every fit of
 * it, THieF's aggregated levels included; a model called directly decides from its own series. Shorter
 * histories keep 1.5.0's stop (values and vertices within 1e-7, values within 1e-8 for Theta and
 * ARIMA). The values-only stop pays where evaluations are long (issue 10's daily call: 200 points;
 * hourly data: a 400-point window) but it also stops a simplex that collapsed on a bound or on ETS's
 * β ≤ α wall, which on short series moved forecasts most (M1's YAC24, 13 points: MASE +1.15); below 100
 * points 1.5.0's stop costs little. Chosen after measuring the stop on every length (bench/RESULTS.md,
 * 1.6.0): with it M1, M3 and M4 hourly print 1.5.0's MASE and WQL or better.
 */
export const VALUES_STOP_MIN_POINTS = 100;

/**
 * Nelder–Mead minimiser (adaptive coefficients) with box bounds by clamping. Deterministic.
 */
export function nelderMead(
  f: (x: number[]) => number,
  x0: number[],
  opts: NelderMeadOptions = {},
): { x: number[]; fx: number; iterations: number } {
  const n = x0.length;
  const maxIter = opts.maxIter ?? 200 * n;
  const tol = opts.tol ?? 1e-8;
  const lower = opts.lower, upper = opts.upper;
  const clamp = (x: number[]) => {
    if (lower || upper) {
      for (let i = 0; i < n; i++) {
        if (lower && x[i] < lower[i]) x[i] = lower[i];
        if (upper && x[i] > upper[i]) x[i] = upper[i];
      }
    }
    return x;
  };
  const safe = (x: number[]) => {
    const v = f(x);
    return Number.isFinite(v) ? v : 1e300;
  };
  if (n === 0) return { x: [], fx: safe([]), iterations: 0 };
  const alpha = 1, beta = 1 + 2 / n, gamma = 0.75 - 1 / (2 * n), delta = 1 - 1 / n;
  const simplex: number[][] = [clamp(x0.slice())];
  for (let i = 0; i < n; i++) {
    const p = x0.slice();
    const s = opts.step?.[i] ?? (p[i] !== 0 ? 0.05 * Math.abs(p[i]) : 0.00025);
    p[i] += s;
    clamp(p);
    if (p[i] === x0[i]) p[i] -= 2 * s;
    simplex.push(clamp(p));
  }
  const fs = simplex.map(safe);
  let it = 0;
  // The vertices stay sorted by value, ties in their previous order (a stable sort). When only the
  // last vertex changed, moving it left past every larger value gives that same order without
  // sorting; the objective is cheap enough (ETS, ARIMA's CSS) that sorting and copying arrays on every
  // iteration was a third of a fit.
  const sortAll = () => {
    const idx = fs.map((_, i) => i).sort((a, b) => fs[a] - fs[b]);
    const s2 = idx.map((i) => simplex[i]);
    const f2 = idx.map((i) => fs[i]);
    for (let i = 0; i <= n; i++) {
      simplex[i] = s2[i];
      fs[i] = f2[i];
    }
  };
  const settleLast = () => {
    const x = simplex[n], fx = fs[n];
    let i = n;
    for (; i > 0 && fs[i - 1] > fx; i--) {
      simplex[i] = simplex[i - 1];
      fs[i] = fs[i - 1];
    }
    simplex[i] = x;
    fs[i] = fx;
  };
  const c = new Array<number>(n);
  // trial points in three arrays of their own; an accepted one takes the worst vertex's place and that
  // vertex's array becomes the trial array, a shrink moves the vertices in place: no array per
  // iteration (the same values in the same order)
  let xr = new Array<number>(n), xe = new Array<number>(n), xc = new Array<number>(n);
  const replaceWorst = (x: number[], fx: number): number[] => {
    const free = simplex[n];
    simplex[n] = x;
    fs[n] = fx;
    return free;
  };
  sortAll();
  for (; it < maxIter; it++) {
    if (Math.abs(fs[n] - fs[0]) <= tol * (Math.abs(fs[0]) + tol)) {
      if (opts.valuesOnly) break;
      let spread = 0;
      for (let i = 1; i <= n; i++) for (let j = 0; j < n; j++) spread = Math.max(spread, Math.abs(simplex[i][j] - simplex[0][j]));
      let largest = -Infinity;
      for (let j = 0; j < n; j++) largest = Math.max(largest, Math.abs(simplex[0][j]));
      if (spread < 1e-7 * (1 + largest)) break;
      if (Math.abs(fs[n] - fs[0]) <= 1e-12 * (Math.abs(fs[0]) + 1e-12)) break;
    }
    c.fill(0);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) c[j] += simplex[i][j] / n;
    const worst = simplex[n];
    for (let j = 0; j < n; j++) xr[j] = c[j] + alpha * (c[j] - worst[j]);
    clamp(xr);
    const fr = safe(xr);
    if (fr < fs[0]) {
      for (let j = 0; j < n; j++) xe[j] = c[j] + beta * (xr[j] - c[j]);
      clamp(xe);
      const fe = safe(xe);
      if (fe < fr) xe = replaceWorst(xe, fe);
      else xr = replaceWorst(xr, fr);
      settleLast();
    } else if (fr < fs[n - 1]) {
      xr = replaceWorst(xr, fr);
      settleLast();
    } else {
      const outside = fr < fs[n];
      if (outside) for (let j = 0; j < n; j++) xc[j] = c[j] + gamma * (xr[j] - c[j]);
      else for (let j = 0; j < n; j++) xc[j] = c[j] - gamma * (c[j] - worst[j]);
      clamp(xc);
      const fc = safe(xc);
      if (fc < (outside ? fr : fs[n])) {
        xc = replaceWorst(xc, fc);
        settleLast();
      } else {
        const best = simplex[0];
        for (let i = 1; i <= n; i++) {
          const v = simplex[i];
          for (let j = 0; j < n; j++) v[j] = best[j] + delta * (v[j] - best[j]);
          clamp(v);
          fs[i] = safe(v);
        }
        sortAll();
      }
    }
  }
  return { x: simplex[0], fx: fs[0], iterations: it };
}

/** Least-squares line through (0..n-1, y): returns intercept and slope. */
export function linearFit(y: ArrayLike<number>): { intercept: number; slope: number } {
  const n = y.length;
  const tm = (n - 1) / 2;
  const ym = mean(y);
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (i - tm) * (y[i] - ym);
    sxx += (i - tm) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : 0;
  return { intercept: ym - slope * tm, slope };
}

/**
 * Seasonality test (as statsforecast's Theta and the M4 benchmarks): the autocorrelation at the season
 * lag is significant at 90% (two-sided), with Bartlett's standard error.
 */
export function seasonalityTest(y: ArrayLike<number>, m: number): boolean {
  if (m < 2 || y.length < 3 * m) return false;
  if (isConstant(y)) return false;
  const r = acf(y, m);
  let s = 0;
  for (let i = 0; i < m - 1; i++) s += r[i] * r[i];
  const limit = 1.6448536269514722 * Math.sqrt((1 + 2 * s) / y.length);
  return Math.abs(r[m - 1]) > limit;
}

/** Centred moving average of order m (2×m when m is even); NaN where undefined. */
export function centredMovingAverage(y: ArrayLike<number>, m: number): number[] {
  const n = y.length;
  const out = new Array<number>(n).fill(NaN);
  if (m % 2 === 1) {
    const h = (m - 1) / 2;
    for (let t = h; t < n - h; t++) {
      let s = 0;
      for (let j = -h; j <= h; j++) s += y[t + j];
      out[t] = s / m;
    }
  } else {
    const h = m / 2;
    for (let t = h; t < n - h; t++) {
      let s = 0.5 * y[t - h] + 0.5 * y[t + h];
      for (let j = -h + 1; j <= h - 1; j++) s += y[t + j];
      out[t] = s / m;
    }
  }
  return out;
}

/**
 * Classical decomposition seasonal indices (length m, phase aligned with y[0]); multiplicative indices
 * average 1, additive ones 0.
 */
export function seasonalIndices(y: ArrayLike<number>, m: number, multiplicative: boolean): number[] {
  const n = y.length;
  const trend = centredMovingAverage(y, m);
  const sums = new Array<number>(m).fill(0);
  const counts = new Array<number>(m).fill(0);
  for (let t = 0; t < n; t++) {
    if (Number.isNaN(trend[t])) continue;
    const v = multiplicative ? y[t] / trend[t] : y[t] - trend[t];
    if (!Number.isFinite(v)) continue;
    sums[t % m] += v;
    counts[t % m]++;
  }
  const idx = sums.map((s, i) => (counts[i] ? s / counts[i] : multiplicative ? 1 : 0));
  const avg = mean(idx);
  return idx.map((v) => (multiplicative ? v / avg : v - avg));
}

/** KPSS level-stationarity statistic, Bartlett window with floor(3√n/13) lags (as statsforecast's ndiffs). */
export function kpssStatistic(x: ArrayLike<number>): number {
  const n = x.length;
  const m = mean(x);
  const e = new Array<number>(n);
  for (let i = 0; i < n; i++) e[i] = x[i] - m;
  let s = 0, eta = 0;
  for (let i = 0; i < n; i++) {
    s += e[i];
    eta += s * s;
  }
  eta /= n * n;
  const lags = Math.floor((3 * Math.sqrt(n)) / 13);
  let s2 = 0;
  for (let i = 0; i < n; i++) s2 += e[i] * e[i];
  s2 /= n;
  for (let l = 1; l <= lags; l++) {
    let c = 0;
    for (let i = l; i < n; i++) c += e[i] * e[i - l];
    s2 += (2 * (1 - l / (lags + 1)) * c) / n;
  }
  return s2 > 0 ? eta / s2 : 0;
}

export function diff(x: ArrayLike<number>, lag = 1): number[] {
  const out: number[] = [];
  for (let i = lag; i < x.length; i++) out.push(x[i] - x[i - lag]);
  return out;
}

/** Empirical quantile with linear interpolation (type 7). */
export function quantileOf(sorted: number[], p: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const h = (n - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/** Deterministic PRNG (mulberry32) for simulations in tests and benchmarks. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal draws from a uniform generator (Box–Muller). */
export function normalGenerator(rand: () => number): () => number {
  return () => {
    const u = Math.max(rand(), 1e-300);
    const v = rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

/** Solves A x = b in place by Gaussian elimination with partial pivoting; null when singular. */
export function solveLinear(A: Float64Array, b: Float64Array, n: number): Float64Array | null {
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(A[r * n + c]) > Math.abs(A[piv * n + c])) piv = r;
    if (Math.abs(A[piv * n + c]) < 1e-12) return null;
    if (piv !== c) {
      for (let k = 0; k < n; k++) {
        const t = A[c * n + k];
        A[c * n + k] = A[piv * n + k];
        A[piv * n + k] = t;
      }
      const t = b[c];
      b[c] = b[piv];
      b[piv] = t;
    }
    for (let r = c + 1; r < n; r++) {
      const f = A[r * n + c] / A[c * n + c];
      if (f === 0) continue;
      for (let k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  const x = new Float64Array(n);
  for (let r = n - 1; r >= 0; r--) {
    let v = b[r];
    for (let k = r + 1; k < n; k++) v -= A[r * n + k] * x[k];
    x[r] = v / A[r * n + r];
  }
  return x;
}
