/**
 * Temporal hierarchies (THieF, Athanasopoulos, Hyndman, Kourentzes & Petropoulos 2017): the series is
 * aggregated over non-overlapping blocks of every divisor k of the season length m (monthly: 1, 2, 3,
 * 4, 6, 12 months), a model is fitted at every level, and the base forecasts of all levels are
 * reconciled into coherent bottom-level forecasts by weighted least squares with structural scaling
 * (the variance of a level-k forecast taken proportional to k). Aggregated levels see the trend with
 * less noise, the bottom level sees the fine seasonal pattern; reconciliation pools them.
 */
import { solveLinear } from './math';
import type { ModelForecast } from './models/types';

/** Fits a model to x with season length s and returns its point forecasts for h steps. */
export type LevelForecaster = (x: number[], s: number, h: number) => number[];

/** Aggregation levels used: divisors k of m whose aggregated series keeps at least `minLength` points. */
export function temporalLevels(n: number, m: number, minLength: number): number[] {
  const full = Math.floor(n / m) * m;
  const out: number[] = [];
  for (let k = 1; k <= m; k++) if (m % k === 0 && (k === 1 || full / k >= minLength)) out.push(k);
  return out;
}

/** Non-overlapping block sums of size k over the last complete blocks of y (the oldest points dropped). */
export function aggregate(y: ArrayLike<number>, k: number, blocks: number): number[] {
  const start = y.length - blocks * k;
  const out: number[] = [];
  for (let i = 0; i < blocks; i++) {
    let s = 0;
    for (let j = 0; j < k; j++) s += y[start + i * k + j];
    out.push(s);
  }
  return out;
}

/**
 * Reconciles one block of m bottom-level periods: `base[l]` holds the m / levels[l] base forecasts of
 * level levels[l] (levels include 1). Returns the m bottom-level values minimising
 * Σ (node − base)² / k over all nodes (WLS with structural scaling).
 */
export function reconcileBlock(base: number[][], levels: number[], m: number): number[] {
  // normal equations: (S' Λ S) b = S' Λ ŷ, with S' Λ S = Σ_k (1/k) · [i, j in the same level-k block]
  const A = new Float64Array(m * m);
  const rhs = new Float64Array(m);
  levels.forEach((k, l) => {
    const w = 1 / k;
    for (let node = 0; node < m / k; node++) {
      for (let i = node * k; i < node * k + k; i++) {
        rhs[i] += base[l][node] * w;
        for (let j = node * k; j < node * k + k; j++) A[i * m + j] += w;
      }
    }
  });
  // S' Λ S is positive definite (the bottom level alone gives the identity), so never singular
  const x = solveLinear(A, rhs, m);
  if (!x) throw new Error('temporal reconciliation: singular system');
  return Array.from(x);
}

/**
 * Temporal-hierarchy forecast of y for h steps: `bottom(k)` is the bottom-level model's forecast for k
 * steps, `level` fits an aggregated level. Returns the reconciled means with the bottom model's
 * standard deviations; the bottom forecast alone when no aggregated level has `minLength` points.
 */
export function temporalForecast(
  y: number[],
  m: number,
  h: number,
  bottom: (steps: number) => ModelForecast,
  level: LevelForecaster,
  minLength = 8,
): ModelForecast {
  const levels = m > 1 ? temporalLevels(y.length, m, minLength) : [1];
  if (levels.length < 2) return bottom(h);
  const years = Math.ceil(h / m);
  const full = Math.floor(y.length / m) * m;
  const b = bottom(years * m);
  // the last complete block ends with the last observation, so every level's forecasts start together
  const fc = levels.map((k) => (k === 1 ? b.mean : level(aggregate(y, k, full / k), m / k, years * (m / k))));
  const out: number[] = [];
  for (let j = 0; j < years; j++) {
    const base = levels.map((k, l) => fc[l].slice(j * (m / k), (j + 1) * (m / k)));
    out.push(...reconcileBlock(base, levels, m));
  }
  return { mean: out.slice(0, h), sd: b.sd.slice(0, h) };
}
