/** Forecast accuracy measures (pure). */

/** In-sample mean absolute error of the seasonal naive forecast (lag m; 1 = naive). */
export function naiveScale(train: ArrayLike<number>, m: number): number {
  const lag = m > 1 && train.length > m ? m : 1;
  let s = 0, k = 0;
  for (let t = lag; t < train.length; t++) {
    s += Math.abs(train[t] - train[t - lag]);
    k++;
  }
  return k ? s / k : 0;
}

export function mae(actual: ArrayLike<number>, forecast: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < actual.length; i++) s += Math.abs(actual[i] - forecast[i]);
  return actual.length ? s / actual.length : NaN;
}

/** MASE of one forecast; `scale` from naiveScale. A zero scale gives 0 for a perfect forecast, else the MAE over a tiny scale. */
export function mase(actual: ArrayLike<number>, forecast: ArrayLike<number>, scale: number): number {
  const e = mae(actual, forecast);
  if (scale > 0) return e / scale;
  return e === 0 ? 0 : e / 1e-12;
}

/**
 * M3-style sMAPE in percent: mean of 200·|y − ŷ| / (|y| + |ŷ|) (equal to 200·|y − ŷ| / (y + ŷ) for
 * positive values; the absolute values keep a negative forecast from lowering the score).
 */
export function smape(actual: ArrayLike<number>, forecast: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i]) + Math.abs(forecast[i]);
    s += d !== 0 ? (200 * Math.abs(actual[i] - forecast[i])) / d : 0;
  }
  return s / actual.length;
}

/** Accumulates the weighted quantile loss Σ 2|(y − q)(1{y ≤ q} − τ)| / Σ|y| averaged over τ. */
export class WqlAccumulator {
  private readonly loss: number[];
  private absSum = 0;
  constructor(readonly taus: number[]) {
    this.loss = taus.map(() => 0);
  }
  add(actual: ArrayLike<number>, quantiles: number[][]): void {
    for (let i = 0; i < actual.length; i++) {
      this.absSum += Math.abs(actual[i]);
      for (let j = 0; j < this.taus.length; j++) {
        const q = quantiles[j][i];
        const y = actual[i];
        this.loss[j] += 2 * Math.abs((y - q) * ((y <= q ? 1 : 0) - this.taus[j]));
      }
    }
  }
  value(): number {
    if (this.absSum === 0) return NaN;
    return this.loss.reduce((a, b) => a + b, 0) / this.taus.length / this.absSum;
  }
}
