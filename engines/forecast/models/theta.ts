/**
 * Theta models (Fiorucci et al. 2016): standard (STM), optimised (OTM), dynamic standard (DSTM) and
 * dynamic optimised (DOTM). Parameters (initial level, α, θ) minimise the in-sample one-step MSE;
 * AutoTheta keeps the variant with the lowest MSE. Works on (seasonally adjusted) non-seasonal data.
 */
import { mean, nelderMead } from '../math';
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
  const decayNext = Math.pow(1 - alpha, i + 1);
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

export interface ThetaFit extends FittedModel {
  variant: ThetaVariant;
  alpha: number;
  theta: number;
  mse: number;
}

export function fitTheta(y: number[], v: ThetaVariant): ThetaFit | null {
  const n = y.length;
  if (n < 4) return null;
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
    const r = thetaFilter(y, v, x[0] * scale, x[1], optTheta ? x[2] : 2);
    return Number.isFinite(r.mse) ? r.mse / (scale * scale) : 1e300;
  };
  const res = nelderMead(obj, x0, { lower: lo, upper: hi, maxIter: 300, tol: 1e-8, step: [0.1, 0.1, 0.5].slice(0, x0.length) });
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

export function autoTheta(y: number[], variants: ThetaVariant[] = ['STM', 'OTM', 'DSTM', 'DOTM']): ThetaFit {
  let best: ThetaFit | null = null;
  for (const v of variants) {
    const f = fitTheta(y, v);
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
