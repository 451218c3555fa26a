/**
 * Theta models (Fiorucci et al. 2016): standard (STM), optimised (OTM), dynamic standard (DSTM) and
 * dynamic optimised (DOTM). Parameters (initial level, α, θ) minimise the in-sample one-step MSE;
 * AutoTheta keeps the variant with the lowest MSE. Works on (seasonally adjusted) non-seasonal data.
 */
import { mean, nelderMead, VALUES_STOP_MIN_POINTS } from '../math';
import { FittedModel, ForecastModel, ModelForecast } from './types';

export type ThetaVariant = 'STM' | 'OTM' | 'DSTM' | 'DOTM';

interface ThetaState {
  level: number;
  meanY: number;
  A: number;
  B: number;
  mu: number;
  /** (1 − α)^decayIndex, computed by the previous step (each step needs (1 − α)^i and (1 − α)^(i+1)). */
  decay: number;
  decayIndex: number;
}

/**
 * (1 − α)^(i+1) from (1 − α)^i: one product (1.6.0; 1.5.0 called Math.pow for every power, most of
 * Theta's time), so that the powers are (1 − α)·(1 − α)·… in that order, within about i rounding errors
 * (≈ 2e-14 relative at i = 200) of the exact power; values below 1e-290 become 0 (their contribution,
 * A·(1 − α)^i, is nil, and subnormal products are slow).
 */
function nextPower(power: number, base: number): number {
  const next = power * base;
  return next < 1e-290 ? 0 : next;
}

const dynamic = (v: ThetaVariant) => v === 'DSTM' || v === 'DOTM';

function initState(y: ArrayLike<number>, v: ThetaVariant, l0: number, alpha: number, theta: number): ThetaState {
  const level = alpha * y[0] + (1 - alpha) * l0;
  if (dynamic(v)) return { level, meanY: y[0], A: y[0], B: 0, mu: y[0], decay: NaN, decayIndex: -1 };
  const n = y.length;
  let sTy = 0, sY = 0;
  for (let i = 0; i < n; i++) {
    sTy += (i + 1) * y[i];
    sY += y[i];
  }
  const B = n > 1 ? (6 * ((2 * sTy) / n - ((1 + n) * sY) / n)) / (n * n - 1) : 0;
  const A = sY / n - ((n + 1) * B) / 2;
  return { level, meanY: y[0], A, B, mu: l0 + (1 - 1 / theta) * (A + B), decay: NaN, decayIndex: -1 };
}

/** One step of the Theta recursion at time index i (1-based count of past points), in place. */
function step(st: ThetaState, i: number, v: ThetaVariant, alpha: number, theta: number, y: number | null): number {
  // One state is stepped with one α, so the previous step's (1 − α)^(i+1) is this step's (1 − α)^i.
  const decay = st.decayIndex === i ? st.decay : Math.pow(1 - alpha, i);
  const decayNext = nextPower(decay, 1 - alpha);
  st.decay = decayNext;
  st.decayIndex = i + 1;
  const mu = st.level + (1 - 1 / theta) * (st.A * decay + (st.B * (1 - decayNext)) / alpha);
  const obs = y === null ? mu : y;
  const prevMean = st.meanY;
  st.level = alpha * obs + (1 - alpha) * st.level;
  st.meanY = (i * prevMean + obs) / (i + 1);
  if (dynamic(v)) {
    st.B = ((i - 1) * st.B + (6 * (obs - prevMean)) / (i + 1)) / (i + 2);
    st.A = st.meanY - (st.B * (i + 2)) / 2;
  }
  st.mu = mu;
  return mu;
}

export function thetaFilter(y: ArrayLike<number>, v: ThetaVariant, l0: number, alpha: number, theta: number) {
  const n = y.length;
  const st = initState(y, v, l0, alpha, theta);
  const residuals = new Array<number>(n);
  residuals[0] = y[0] - st.mu;
  let sse = 0;
  for (let i = 1; i < n; i++) {
    const f = step(st, i, v, alpha, theta, y[i]);
    residuals[i] = y[i] - f;
    if (i >= 3) sse += residuals[i] ** 2;
  }
  return { state: st, residuals, mse: sse / Math.max(1, n - 3) };
}

/**
 * (1 − α)^i for i = 1..n as step computes them (running products from (1 − α)^1, see nextPower), kept
 * for the last α asked: the optimiser asks again for the α it just asked for about half of the time (α
 * at a bound, or a move of the other parameters only).
 */
function decayTable(n: number): (alpha: number) => Float64Array {
  const powers = new Float64Array(n + 1);
  let last = NaN;
  return (alpha) => {
    if (alpha !== last) {
      const b = 1 - alpha;
      powers[1] = b;
      for (let i = 2; i <= n; i++) powers[i] = nextPower(powers[i - 1], b);
      last = alpha;
    }
    return powers;
  };
}

/**
 * The optimiser's objective: thetaFilter's mse for these parameters, by the same operations in the
 * same order, with step inlined, the powers from the table and the static variants' A and B (which
 * depend on y only) given.
 */
function thetaMse(y: ArrayLike<number>, dyn: boolean, l0: number, alpha: number, theta: number, powers: Float64Array, A0: number, B0: number): number {
  const n = y.length;
  let level = alpha * y[0] + (1 - alpha) * l0;
  let meanY = y[0];
  let A = dyn ? y[0] : A0;
  let B = dyn ? 0 : B0;
  let sse = 0;
  for (let i = 1; i < n; i++) {
    const decay = powers[i];
    const decayNext = powers[i + 1];
    const mu = level + (1 - 1 / theta) * (A * decay + (B * (1 - decayNext)) / alpha);
    const obs = y[i];
    const prevMean = meanY;
    level = alpha * obs + (1 - alpha) * level;
    meanY = (i * prevMean + obs) / (i + 1);
    if (dyn) {
      B = ((i - 1) * B + (6 * (obs - prevMean)) / (i + 1)) / (i + 2);
      A = meanY - (B * (i + 2)) / 2;
    }
    const r = y[i] - mu;
    if (i >= 3) sse += r ** 2;
  }
  return sse / Math.max(1, n - 3);
}

export interface ThetaFit extends FittedModel {
  variant: ThetaVariant;
  alpha: number;
  theta: number;
  mse: number;
}

/** `decay`: a table shared by the fits of one series (autoTheta), whose α often coincide at the bounds. */
/** `valuesStop`: the optimiser's values-only stop (default: from VALUES_STOP_MIN_POINTS points; see fitEtsSpec). */
export function fitTheta(y: number[], v: ThetaVariant, decay: (alpha: number) => Float64Array = decayTable(y.length), valuesStop = y.length >= VALUES_STOP_MIN_POINTS): ThetaFit | null {
  const n = y.length;
  if (n < 4) return null;
  const dyn = dynamic(v);
  // initState's A and B of the static variants (α, θ and l0 do not enter them)
  const { A: A0, B: B0 } = initState(y, v, 0, 0.5, 2);
  const optTheta = v === 'OTM' || v === 'DOTM';
  const scale = Math.max(1e-8, mean(y.map(Math.abs)));
  const x0 = [y[0] / 2 / scale, 0.5];
  const lo = [-1e10, 0.1];
  const hi = [1e10, 0.99];
  if (optTheta) {
    x0.push(2);
    lo.push(1);
    hi.push(1e10);
  }
  const obj = (x: number[]) => {
    const mse = thetaMse(y, dyn, x[0] * scale, x[1], optTheta ? x[2] : 2, decay(x[1]), A0, B0);
    return Number.isFinite(mse) ? mse / (scale * scale) : 1e300;
  };
  // 1.6.0, with valuesStop: stops once the MSEs agree within 1e-7 (math.ts,
  // valuesOnly; 1.5.0: values within 1e-8 and coordinates within 1e-7)
  const valuesOnly = valuesStop;
  const res = nelderMead(obj, x0, { lower: lo, upper: hi, maxIter: 300, tol: valuesOnly ? 1e-7 : 1e-8, valuesOnly, step: [0.1, 0.1, 0.5].slice(0, x0.length) });
  const l0 = res.x[0] * scale, alpha = res.x[1], theta = optTheta ? res.x[2] : 2;
  const run = thetaFilter(y, v, l0, alpha, theta);
  if (!Number.isFinite(run.mse)) return null;
  let s2 = 0, k = 0;
  for (let i = 3; i < n; i++) {
    s2 += run.residuals[i] ** 2;
    k++;
  }
  const sigma = Math.sqrt(s2 / Math.max(1, k - 1));
  const predict = (h: number): ModelForecast => {
    const st = { ...run.state };
    const out: number[] = [];
    const sd: number[] = [];
    for (let j = 0; j < h; j++) {
      out.push(step(st, n + j, v, alpha, theta, null));
      // SES-like variance growth: σ²(1 + α²·j)
      sd.push(sigma * Math.sqrt(1 + alpha * alpha * j));
    }
    return { mean: out, sd };
  };
  return { name: `Theta(${v})`, residuals: run.residuals, predict, variant: v, alpha, theta, mse: run.mse };
}

export function autoTheta(y: number[], variants: ThetaVariant[] = ['STM', 'OTM', 'DSTM', 'DOTM'], valuesStop = y.length >= VALUES_STOP_MIN_POINTS): ThetaFit {
  let best: ThetaFit | null = null;
  const decay = decayTable(y.length);
  for (const v of variants) {
    const f = fitTheta(y, v, decay, valuesStop);
    if (f && (!best || f.mse < best.mse)) best = f;
  }
  if (!best) throw new Error('Theta: no model could be fitted');
  return best;
}

export class AutoTheta implements ForecastModel {
  readonly name = 'AutoTheta';
  constructor(private readonly variants: ThetaVariant[] = ['STM', 'OTM', 'DSTM', 'DOTM']) {}
  fit(y: number[]): ThetaFit {
    return autoTheta(y, this.variants);
  }
}
