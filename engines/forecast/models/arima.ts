/**
 * ARIMA(p,d,q)(P,D,Q)m fitted by conditional sum of squares (Nelder–Mead on parameters mapped to the
 * stationary/invertible region through partial autocorrelations), and AutoARIMA with unit-root tests
 * (KPSS for d, seasonal strength for D) and the Hyndman–Khandakar stepwise search on AICc.
 */
import { diff, isConstant, kpssStatistic, mean, nelderMead, seasonalIndices, solveLinear, VALUES_STOP_MIN_POINTS, variance } from '../math';
import { FittedModel, ForecastModel, ModelForecast } from './types';

export interface ArimaOrder {
  p: number;
  d: number;
  q: number;
  P: number;
  D: number;
  Q: number;
  m: number;
  constant: boolean;
}

/** Maps unconstrained values to coefficients of a stationary AR polynomial (Jones 1980). */
export function pacfToAr(u: number[]): number[] {
  const r = u.map((v) => 0.98 * Math.tanh(v));
  const phi: number[] = [];
  for (let k = 0; k < r.length; k++) {
    const prev = phi.slice();
    phi.push(r[k]);
    for (let j = 0; j < k; j++) phi[j] = prev[j] - r[k] * prev[k - 1 - j];
  }
  return phi;
}

/** Coefficients of (1 − Σ a_i B^i)(1 − Σ A_j B^{jm}) as "y_t = Σ c_i y_{t−i}" coefficients (AR side). */
function expandAr(a: number[], A: number[], m: number): number[] {
  const len = a.length + A.length * m;
  const poly = new Array<number>(len + 1).fill(0);
  // polynomial 1 - a(B)
  const p1 = [1, ...a.map((v) => -v)];
  const p2 = new Array<number>(A.length * m + 1).fill(0);
  p2[0] = 1;
  A.forEach((v, j) => (p2[(j + 1) * m] = -v));
  for (let i = 0; i < p1.length; i++) for (let j = 0; j < p2.length; j++) poly[i + j] += p1[i] * p2[j];
  return poly.slice(1).map((v) => -v);
}

/** Coefficients of (1 + Σ b_i B^i)(1 + Σ B_j B^{jm}) beyond the leading 1 (MA side). */
function expandMa(b: number[], Bs: number[], m: number): number[] {
  const len = b.length + Bs.length * m;
  const poly = new Array<number>(len + 1).fill(0);
  const p1 = [1, ...b];
  const p2 = new Array<number>(Bs.length * m + 1).fill(0);
  p2[0] = 1;
  Bs.forEach((v, j) => (p2[(j + 1) * m] = v));
  for (let i = 0; i < p1.length; i++) for (let j = 0; j < p2.length; j++) poly[i + j] += p1[i] * p2[j];
  return poly.slice(1);
}

/** Differencing: seasonal D times at lag m, then d times at lag 1; keeps each stage for integration. */
function differenceStages(y: number[], d: number, D: number, m: number): number[][] {
  const stages: number[][] = [y];
  let x = y;
  for (let i = 0; i < D; i++) {
    x = diff(x, m);
    stages.push(x);
  }
  for (let i = 0; i < d; i++) {
    x = diff(x, 1);
    stages.push(x);
  }
  return stages;
}

function cssResiduals(x: number[], mu: number, ar: number[], ma: number[]): { e: number[]; sse: number; nUsed: number } {
  // least squares over every observation, pre-sample values at the mean and pre-sample errors at zero,
  // so that models of different orders are compared on the same observations
  const n = x.length;
  // A seasonal model's expanded polynomials are mostly zeros (p + P·m lags, at most p + P + p·P of
  // them non-zero): only the non-zero lags are visited, in the same order, so every sum is the same.
  const [arLag, arCoef] = nonZeroLags(ar);
  const [maLag, maCoef] = nonZeroLags(ma);
  const e = new Array<number>(n).fill(0);
  let sse = 0;
  for (let t = 0; t < n; t++) {
    let v = x[t] - mu;
    for (let k = 0; k < arLag.length && arLag[k] < t; k++) v -= arCoef[k] * (x[t - 1 - arLag[k]] - mu);
    for (let k = 0; k < maLag.length && maLag[k] < t; k++) v -= maCoef[k] * e[t - 1 - maLag[k]];
    e[t] = v;
    sse += v * v;
  }
  return { e, sse, nUsed: n };
}

/** AR and MA terms written out in cssObjective's main loop (AR: twice as many for long AR sides). */
const UNROLLED = 4;

/**
 * The CSS objective of fitArima's search, n·log(SSE/n), as its first version computed it through
 * unpack, expandAr/expandMa, nonZeroLags and cssResiduals, without their allocations: the optimiser
 * calls it thousands of times per fit and the arrays those build cost more than the sums. Same numbers
 * in the same order: the partial autocorrelations map as pacfToAr does; the products are accumulated in
 * the same (i, j) order, only the seasonal factor's structural zeros are skipped (adding ±0 to a sum
 * that starts at +0 never changes it); the lags kept are the non-zero ones, in increasing order.
 */
function cssObjective(x: number[], p: number, q: number, P: number, Q: number, m: number, constant: boolean): (u: number[]) => number {
  const n = x.length;
  const xs = Float64Array.from(x);
  const e = new Float64Array(n), xc = new Float64Array(n);
  const a = new Float64Array(p), b = new Float64Array(q), A = new Float64Array(P), B = new Float64Array(Q);
  const prev = new Float64Array(Math.max(p, q, P, Q));
  const arPoly = new Float64Array(p + P * m + 1), maPoly = new Float64Array(q + Q * m + 1);
  const arLag = new Int32Array(p + P * m), arCoef = new Float64Array(p + P * m);
  const maLag = new Int32Array(q + Q * m), maCoef = new Float64Array(q + Q * m);
  const pacf = (u: number[], off: number, len: number, out: Float64Array, sign: number): void => {
    for (let k = 0; k < len; k++) {
      const r = 0.98 * Math.tanh(u[off + k]);
      for (let j = 0; j < k; j++) prev[j] = out[j];
      out[k] = r;
      for (let j = 0; j < k; j++) out[j] = prev[j] - r * prev[k - 1 - j];
    }
    // pacfToAr(...).map((v) => -v) for the MA side
    if (sign < 0) for (let k = 0; k < len; k++) out[k] = -out[k];
  };
  return (u: number[]): number => {
    pacf(u, 0, p, a, 1);
    pacf(u, p, q, b, -1);
    pacf(u, p + q, P, A, 1);
    pacf(u, p + q + P, Q, B, -1);
    const mu = constant ? u[p + q + P + Q] : 0;
    // (1 − a(B))(1 − A(B^m)): p1 = [1, −a…], p2 = 1 at 0 and −A_j at (j + 1)m
    arPoly.fill(0);
    for (let i = 0; i <= p; i++) {
      const pi = i === 0 ? 1 : -a[i - 1];
      for (let j = 0; j <= P; j++) arPoly[i + j * m] += pi * (j === 0 ? 1 : -A[j - 1]);
    }
    let nAr = 0;
    for (let i = 1; i < arPoly.length; i++) {
      const c = -arPoly[i];
      if (c !== 0) {
        arLag[nAr] = i - 1;
        arCoef[nAr++] = c;
      }
    }
    maPoly.fill(0);
    for (let i = 0; i <= q; i++) {
      const pi = i === 0 ? 1 : b[i - 1];
      for (let j = 0; j <= Q; j++) maPoly[i + j * m] += pi * (j === 0 ? 1 : B[j - 1]);
    }
    let nMa = 0;
    for (let i = 1; i < maPoly.length; i++) {
      const c = maPoly[i];
      if (c !== 0) {
        maLag[nMa] = i - 1;
        maCoef[nMa++] = c;
      }
    }
    // x − mu once per point instead of once per point and lag (the same subtraction, so the same value)
    for (let t = 0; t < n; t++) xc[t] = xs[t] - mu;
    // the lags increase, so from one past the largest every term applies and needs no test
    const warm = Math.min(n, Math.max(1, 1 + Math.max(nAr > 0 ? arLag[nAr - 1] : -1, nMa > 0 ? maLag[nMa - 1] : -1)));
    let sse = 0;
    let t = 0;
    for (; t < warm; t++) {
      let v = xc[t];
      for (let k = 0; k < nAr && arLag[k] < t; k++) v -= arCoef[k] * xc[t - 1 - arLag[k]];
      for (let k = 0; k < nMa && maLag[k] < t; k++) v -= maCoef[k] * e[t - 1 - maLag[k]];
      e[t] = v;
      sse += v * v;
    }
    // The first UNROLLED terms of each side in locals, written out: a loop over lag arrays costs twice
    // as much per term. Sides with fewer terms are padded with zero coefficients at lag 1, after their
    // real terms: v − 0·z (z finite) is v up to the sign of a zero, and v² is blind to that sign. A
    // non-finite z is a residual that already made sse non-finite, padded or not, and the optimiser
    // takes every non-finite value as the same 1e300.
    const a0 = nAr > 0 ? arCoef[0] : 0, a1 = nAr > 1 ? arCoef[1] : 0, a2 = nAr > 2 ? arCoef[2] : 0, a3 = nAr > 3 ? arCoef[3] : 0;
    const ao0 = nAr > 0 ? arLag[0] + 1 : 1, ao1 = nAr > 1 ? arLag[1] + 1 : 1, ao2 = nAr > 2 ? arLag[2] + 1 : 1, ao3 = nAr > 3 ? arLag[3] + 1 : 1;
    const a4 = nAr > 4 ? arCoef[4] : 0, a5 = nAr > 5 ? arCoef[5] : 0, a6 = nAr > 6 ? arCoef[6] : 0, a7 = nAr > 7 ? arCoef[7] : 0;
    const ao4 = nAr > 4 ? arLag[4] + 1 : 1, ao5 = nAr > 5 ? arLag[5] + 1 : 1, ao6 = nAr > 6 ? arLag[6] + 1 : 1, ao7 = nAr > 7 ? arLag[7] + 1 : 1;
    const b0 = nMa > 0 ? maCoef[0] : 0, b1 = nMa > 1 ? maCoef[1] : 0, b2 = nMa > 2 ? maCoef[2] : 0, b3 = nMa > 3 ? maCoef[3] : 0;
    const bo0 = nMa > 0 ? maLag[0] + 1 : 1, bo1 = nMa > 1 ? maLag[1] + 1 : 1, bo2 = nMa > 2 ? maLag[2] + 1 : 1, bo3 = nMa > 3 ? maLag[3] + 1 : 1;
    if (nAr <= UNROLLED) {
      for (; t < n; t++) {
        let v = xc[t];
        v -= a0 * xc[t - ao0];
        v -= a1 * xc[t - ao1];
        v -= a2 * xc[t - ao2];
        v -= a3 * xc[t - ao3];
        for (let k = UNROLLED; k < nAr; k++) v -= arCoef[k] * xc[t - 1 - arLag[k]];
        v -= b0 * e[t - bo0];
        v -= b1 * e[t - bo1];
        v -= b2 * e[t - bo2];
        v -= b3 * e[t - bo3];
        for (let k = UNROLLED; k < nMa; k++) v -= maCoef[k] * e[t - 1 - maLag[k]];
        e[t] = v;
        sse += v * v;
      }
    } else {
      for (; t < n; t++) {
        let v = xc[t];
        v -= a0 * xc[t - ao0];
        v -= a1 * xc[t - ao1];
        v -= a2 * xc[t - ao2];
        v -= a3 * xc[t - ao3];
        v -= a4 * xc[t - ao4];
        v -= a5 * xc[t - ao5];
        v -= a6 * xc[t - ao6];
        v -= a7 * xc[t - ao7];
        for (let k = 2 * UNROLLED; k < nAr; k++) v -= arCoef[k] * xc[t - 1 - arLag[k]];
        v -= b0 * e[t - bo0];
        v -= b1 * e[t - bo1];
        v -= b2 * e[t - bo2];
        v -= b3 * e[t - bo3];
        for (let k = UNROLLED; k < nMa; k++) v -= maCoef[k] * e[t - 1 - maLag[k]];
        e[t] = v;
        sse += v * v;
      }
    }
    return n * Math.log(sse / n);
  };
}

function nonZeroLags(coef: number[]): [number[], number[]] {
  const lags: number[] = [];
  const values: number[] = [];
  for (let i = 0; i < coef.length; i++) {
    if (coef[i] !== 0) {
      lags.push(i);
      values.push(coef[i]);
    }
  }
  return [lags, values];
}

/** Largest state dimension for which the exact likelihood is used (beyond it, CSS only). */
export const MAX_EXACT_STATE = 8;

/**
 * Exact Gaussian −2 log-likelihood (concentrated over σ², without the constant n(1 + log 2π)) of a
 * zero-mean ARMA process by the Kalman filter, started from the stationary covariance
 * (Gardner, Harvey & Phillips 1980). Returns NaN when it cannot be evaluated.
 */
export function armaExactLik(x: ArrayLike<number>, ar: number[], ma: number[]): { lik: number; sigma2: number } {
  const n = x.length;
  const r = Math.max(ar.length, ma.length + 1);
  const phi = new Float64Array(r);
  ar.forEach((v, i) => (phi[i] = v));
  const R = new Float64Array(r);
  R[0] = 1;
  ma.forEach((v, i) => (R[i + 1] = v));
  // stationary covariance: (I − T⊗T) vec(P) = vec(R Rᵀ)
  const r2 = r * r;
  const A = new Float64Array(r2 * r2);
  const b = new Float64Array(r2);
  const T = (i: number, j: number) => (j === 0 ? phi[i] : j === i + 1 ? 1 : 0);
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < r; j++) {
      const row = i * r + j;
      A[row * r2 + row] += 1;
      b[row] = R[i] * R[j];
      for (let k = 0; k < r; k++) {
        const tik = T(i, k);
        if (tik === 0) continue;
        for (let l = 0; l < r; l++) {
          const tjl = T(j, l);
          if (tjl === 0) continue;
          A[row * r2 + (k * r + l)] -= tik * tjl;
        }
      }
    }
  }
  const p0 = solveLinear(A, b, r2);
  if (!p0) return { lik: NaN, sigma2: NaN };
  let P = Array.from({ length: r }, (_, i) => Array.from({ length: r }, (_, j) => p0[i * r + j]));
  const a = new Float64Array(r);
  let sumLog = 0, ssq = 0;
  let steady = false;
  let Fsteady = 0;
  let K = new Float64Array(r);
  for (let t = 0; t < n; t++) {
    const v = x[t] - a[0];
    let F: number;
    if (!steady) {
      F = P[0][0];
      if (!(F > 0)) return { lik: NaN, sigma2: NaN };
      K = new Float64Array(r);
      for (let i = 0; i < r; i++) K[i] = P[i][0] / F;
    } else F = Fsteady;
    sumLog += Math.log(F);
    ssq += (v * v) / F;
    // update and predict the state
    const upd = new Float64Array(r);
    for (let i = 0; i < r; i++) upd[i] = a[i] + K[i] * v;
    for (let i = 0; i < r; i++) a[i] = phi[i] * upd[0] + (i + 1 < r ? upd[i + 1] : 0);
    if (!steady) {
      // P ← T (P − P[:,0] P[0,:]/F) Tᵀ + R Rᵀ
      const Pu = P.map((row, i) => row.map((pij, j) => pij - (P[i][0] * P[0][j]) / F));
      const TP = Array.from({ length: r }, (_, i) => Array.from({ length: r }, (_, j) => phi[i] * Pu[0][j] + (i + 1 < r ? Pu[i + 1][j] : 0)));
      const Pn = Array.from({ length: r }, (_, i) =>
        Array.from({ length: r }, (_, j) => TP[i][0] * phi[j] + (j + 1 < r ? TP[i][j + 1] : 0) + R[i] * R[j]),
      );
      let change = 0;
      for (let i = 0; i < r; i++) for (let j = 0; j < r; j++) change = Math.max(change, Math.abs(Pn[i][j] - P[i][j]));
      P = Pn;
      if (change < 1e-10) {
        steady = true;
        Fsteady = P[0][0];
        K = new Float64Array(r);
        for (let i = 0; i < r; i++) K[i] = P[i][0] / Fsteady;
      }
    }
  }
  const sigma2 = ssq / n;
  return { lik: n * Math.log(sigma2) + sumLog, sigma2 };
}

export interface ArimaFit extends FittedModel {
  order: ArimaOrder;
  aicc: number;
  sigma2: number;
  ar: number[];
  ma: number[];
  mu: number;
}

/** Estimation switches (exact: refine CSS estimates by exact maximum likelihood when the state is small). */
export const ARIMA_METHOD = { exact: false };

/** `valuesStop`: the optimiser's values-only stop (default: from VALUES_STOP_MIN_POINTS points of y; see fitEtsSpec). */
export function fitArima(y: number[], order: ArimaOrder, valuesStop = y.length >= VALUES_STOP_MIN_POINTS): ArimaFit | null {
  const { p, d, q, P, D, Q, m } = order;
  const stages = differenceStages(y, d, D, m);
  const x = stages[stages.length - 1];
  const constant = order.constant && d + D <= 1;
  const nPar = p + q + P + Q + (constant ? 1 : 0);
  if (x.length - p - P * m < nPar + 3) return null;
  const scale = Math.sqrt(variance(x)) || Math.max(1e-8, mean(x.map(Math.abs))) || 1;
  const xs = x.map((v) => v / scale);
  const xm = mean(xs);
  const unpack = (u: number[]) => {
    let j = 0;
    const a = pacfToAr(u.slice(j, (j += p)));
    const b = pacfToAr(u.slice(j, (j += q))).map((v) => -v);
    const A = pacfToAr(u.slice(j, (j += P)));
    const B = pacfToAr(u.slice(j, (j += Q))).map((v) => -v);
    const mu = constant ? u[j] : 0;
    return { ar: expandAr(a, A, m), ma: expandMa(b, B, m), mu };
  };
  const obj = cssObjective(xs, p, q, P, Q, m, constant);
  const u0 = new Array<number>(p + q + P + Q).fill(0);
  if (constant) u0.push(xm);
  let u = u0;
  if (u0.length > 0) {
    // 1.6.0, with valuesStop: stops once the CSS objectives agree within 1e-7
    // (math.ts, valuesOnly; 1.5.0: values within 1e-8 and coordinates within 1e-7)
    const valuesOnly = valuesStop;
    const res = nelderMead(obj, u0, { maxIter: 150 * u0.length + 100, tol: valuesOnly ? 1e-7 : 1e-8, valuesOnly, step: u0.map(() => 0.1) });
    u = res.x;
  }
  // exact maximum likelihood (started from the CSS estimates) when the state is small
  let exact: { lik: number; sigma2: number } | null = null;
  const stateDim = Math.max(p + P * m, q + Q * m + 1);
  if (ARIMA_METHOD.exact && stateDim <= MAX_EXACT_STATE && u.length > 0) {
    const mlObj = (v: number[]) => {
      const { ar, ma, mu } = unpack(v);
      const z = xs.map((w) => w - mu);
      const res = armaExactLik(z, ar, ma);
      return Number.isFinite(res.lik) ? res.lik : 1e300;
    };
    const res = nelderMead(mlObj, u, { maxIter: 100 * u.length + 100, tol: 1e-7, step: u.map(() => 0.05) });
    if (res.fx < 1e299) {
      u = res.x;
      const { ar, ma, mu } = unpack(u);
      exact = armaExactLik(xs.map((w) => w - mu), ar, ma);
    }
  }
  const { ar, ma, mu } = unpack(u);
  const r = cssResiduals(xs, mu, ar, ma);
  if (!(r.sse > 0) || !Number.isFinite(r.sse)) {
    if (!(r.sse === 0)) return null;
  }
  const nUsed = r.nUsed;
  const sse = r.sse * scale * scale;
  const sigma2 = exact ? exact.sigma2 * scale * scale * (nUsed / Math.max(1, nUsed - nPar)) : Math.max(sse / Math.max(1, nUsed - nPar), 1e-300);
  const k = nPar + 1;
  const loglik2 = exact
    ? exact.lik + nUsed * Math.log(scale * scale) + nUsed * (1 + Math.log(2 * Math.PI))
    : nUsed * Math.log(Math.max(sse, 1e-300) / nUsed) + nUsed * (1 + Math.log(2 * Math.PI));
  const aic = loglik2 + 2 * k;
  const aicc = nUsed - k - 1 > 0 ? aic + (2 * k * (k + 1)) / (nUsed - k - 1) : Infinity;
  const muY = mu * scale;
  const residuals = new Array<number>(y.length).fill(NaN);
  const off = y.length - x.length;
  for (let t = 0; t < x.length; t++) residuals[t + off] = r.e[t] * scale;
  const name = `ARIMA(${p},${d},${q})${m > 1 && P + D + Q > 0 ? `(${P},${D},${Q})[${m}]` : ''}${constant ? ' with constant' : ''}`;

  const predict = (h: number): ModelForecast => {
    // forecast the differenced series
    const xf = x.slice();
    const ef = r.e.map((v) => v * scale);
    for (let k2 = 0; k2 < h; k2++) {
      const t = xf.length;
      let v = muY;
      for (let i = 0; i < ar.length; i++) v += ar[i] * ((t - 1 - i >= 0 ? xf[t - 1 - i] : muY) - muY);
      for (let j = 0; j < ma.length; j++) v += t - 1 - j >= 0 && t - 1 - j < x.length ? ma[j] * ef[t - 1 - j] : 0;
      xf.push(v);
    }
    let fut = xf.slice(x.length);
    // integrate back through the stages (regular differences first, then seasonal ones)
    for (let s = stages.length - 2; s >= 0; s--) {
      const lag = s < D ? m : 1;
      const hist = stages[s];
      const full = hist.slice();
      for (let k2 = 0; k2 < h; k2++) full.push(fut[k2] + full[full.length - lag]);
      fut = full.slice(hist.length);
    }
    // ψ weights of the full model (AR side including differences)
    let arFull = ar.slice();
    const mult = (poly: number[], lag: number) => {
      // (1 - Σ c_i B^i)(1 - B^lag)
      const a1 = [1, ...poly.map((v) => -v)];
      const out = new Array<number>(a1.length + lag).fill(0);
      for (let i = 0; i < a1.length; i++) {
        out[i] += a1[i];
        out[i + lag] -= a1[i];
      }
      return out.slice(1).map((v) => -v);
    };
    for (let i = 0; i < D; i++) arFull = mult(arFull, m);
    for (let i = 0; i < d; i++) arFull = mult(arFull, 1);
    const psi = [1];
    for (let j = 1; j < h; j++) {
      let v = j - 1 < ma.length ? ma[j - 1] : 0;
      for (let i = 1; i <= Math.min(j, arFull.length); i++) v += arFull[i - 1] * psi[j - i];
      psi.push(v);
    }
    const sd: number[] = [];
    let acc = 0;
    for (let j = 0; j < h; j++) {
      acc += psi[j] * psi[j];
      sd.push(Math.sqrt(sigma2 * acc));
    }
    return { mean: fut, sd };
  };
  return { name, residuals, predict, order: { ...order, constant }, aicc, sigma2, ar, ma, mu: muY };
}

/** Seasonal strength of the classical decomposition (Wang, Smith & Hyndman 2006). */
export function seasonalStrength(y: number[], m: number): number {
  if (m < 2 || y.length < 2 * m + 1) return 0;
  const s = seasonalIndices(y, m, false);
  // remainder = y − trend − season over the part where the moving average exists
  const n = y.length;
  const half = Math.floor(m / 2);
  const rem: number[] = [];
  const rs: number[] = [];
  for (let t = half; t < n - half; t++) {
    let tr: number;
    if (m % 2 === 1) {
      let a = 0;
      for (let j = -half; j <= half; j++) a += y[t + j];
      tr = a / m;
    } else {
      let a = 0.5 * y[t - half] + 0.5 * y[t + half];
      for (let j = -half + 1; j <= half - 1; j++) a += y[t + j];
      tr = a / m;
    }
    const r = y[t] - tr - s[t % m];
    rem.push(r);
    rs.push(r + s[t % m]);
  }
  const vr = variance(rem), vrs = variance(rs);
  return vrs > 0 ? Math.max(0, 1 - vr / vrs) : 0;
}

export function ndiffs(y: number[], maxD = 2): number {
  let x = y;
  let d = 0;
  while (d < maxD) {
    if (x.length < 5 || isConstant(x)) break;
    if (kpssStatistic(x) <= 0.463) break; // 5% critical value
    x = diff(x, 1);
    d++;
  }
  return d;
}

export interface AutoArimaOptions {
  seasonLength?: number;
  maxP?: number;
  maxQ?: number;
  maxSP?: number;
  maxSQ?: number;
  maxOrder?: number;
  /** force the seasonal differencing order */
  D?: number;
  d?: number;
  /** the optimiser's values-only stop (default: from VALUES_STOP_MIN_POINTS points of y; see fitEtsSpec) */
  valuesStop?: boolean;
}

export function autoArima(y: number[], opts: AutoArimaOptions = {}): ArimaFit {
  let m = opts.seasonLength ?? 1;
  const n = y.length;
  if (m > 1 && n < 2 * m + 4) m = 1;
  const maxP = opts.maxP ?? 5, maxQ = opts.maxQ ?? 5, maxSP = m > 1 ? opts.maxSP ?? 2 : 0, maxSQ = m > 1 ? opts.maxSQ ?? 2 : 0;
  const maxOrder = opts.maxOrder ?? 5;
  const valuesStop = opts.valuesStop ?? y.length >= VALUES_STOP_MIN_POINTS;
  if (isConstant(y)) {
    const f = fitArima(y, { p: 0, d: 0, q: 0, P: 0, D: 0, Q: 0, m: 1, constant: true }, valuesStop);
    if (f) return f;
  }
  const D = opts.D ?? (m > 1 && seasonalStrength(y, m) > 0.64 ? 1 : 0);
  const yd = D ? diff(y, m) : y;
  const d = opts.d ?? ndiffs(yd);
  const allowConst = d + D <= 1;
  const cache = new Map<string, ArimaFit | null>();
  const tryFit = (p: number, q: number, P: number, Q: number, c: boolean): ArimaFit | null => {
    if (p < 0 || q < 0 || P < 0 || Q < 0 || p > maxP || q > maxQ || P > maxSP || Q > maxSQ) return null;
    if (p + q + P + Q > maxOrder) return null;
    c = c && allowConst;
    const key = `${p},${q},${P},${Q},${c}`;
    if (cache.has(key)) return cache.get(key)!;
    const f = fitArima(y, { p, d, q, P, D, Q, m, constant: c }, valuesStop);
    cache.set(key, f && Number.isFinite(f.aicc) ? f : null);
    return cache.get(key)!;
  };
  let best: ArimaFit | null = null;
  const consider = (f: ArimaFit | null) => {
    if (f && (!best || f.aicc < best.aicc - 1e-9)) {
      best = f;
      return true;
    }
    return false;
  };
  const seas = m > 1;
  consider(tryFit(2, 2, seas ? 1 : 0, seas ? 1 : 0, true));
  consider(tryFit(0, 0, 0, 0, true));
  consider(tryFit(1, 0, seas ? 1 : 0, 0, true));
  consider(tryFit(0, 1, 0, seas ? 1 : 0, true));
  if (allowConst) consider(tryFit(0, 0, 0, 0, false));
  let improved = true;
  let iter = 0;
  while (improved && best && iter < 60) {
    improved = false;
    iter++;
    const b: ArimaOrder = (best as ArimaFit).order;
    const moves: [number, number, number, number, boolean][] = [
      [b.p - 1, b.q, b.P, b.Q, b.constant],
      [b.p + 1, b.q, b.P, b.Q, b.constant],
      [b.p, b.q - 1, b.P, b.Q, b.constant],
      [b.p, b.q + 1, b.P, b.Q, b.constant],
      [b.p - 1, b.q - 1, b.P, b.Q, b.constant],
      [b.p + 1, b.q + 1, b.P, b.Q, b.constant],
      [b.p, b.q, b.P, b.Q, !b.constant],
    ];
    if (seas) {
      moves.push(
        [b.p, b.q, b.P - 1, b.Q, b.constant],
        [b.p, b.q, b.P + 1, b.Q, b.constant],
        [b.p, b.q, b.P, b.Q - 1, b.constant],
        [b.p, b.q, b.P, b.Q + 1, b.constant],
        [b.p, b.q, b.P + 1, b.Q + 1, b.constant],
        [b.p, b.q, b.P - 1, b.Q - 1, b.constant],
      );
    }
    for (const mv of moves) {
      if (consider(tryFit(...mv))) {
        improved = true;
        break;
      }
    }
  }
  if (!best) {
    const f = fitArima(y, { p: 0, d: Math.min(d, 1), q: 0, P: 0, D: 0, Q: 0, m: 1, constant: false }, valuesStop);
    if (!f) throw new Error('ARIMA: no model could be fitted');
    return f;
  }
  return best;
}

export class AutoARIMA implements ForecastModel {
  readonly name = 'AutoARIMA';
  constructor(private readonly opts: AutoArimaOptions = {}) {}
  fit(y: number[]): ArimaFit {
    return autoArima(y, this.opts);
  }
}
