import { qnorm } from '../math';

/** Point forecast and predictive standard deviation per horizon step (normal predictive law). */
export interface ModelForecast {
  mean: number[];
  sd: number[];
}

export interface FittedModel {
  /** e.g. "ETS(M,Ad,N)", "ARIMA(0,1,1)", "Theta(DOTM)" */
  readonly name: string;
  /** one-step in-sample residuals (y − ŷ), NaN where undefined */
  readonly residuals: number[];
  predict(h: number): ModelForecast;
}

/** A forecasting model as in statsforecast: `fit(y) → fitted`, then `fitted.predict(h)`. */
export interface ForecastModel {
  readonly name: string;
  fit(y: number[]): FittedModel;
}

/** Quantiles (one array per τ, over the horizon) of a normal predictive law. */
export function normalQuantiles(fc: ModelForecast, taus: number[]): number[][] {
  return taus.map((tau) => {
    const z = qnorm(tau);
    return fc.mean.map((m, i) => (tau === 0.5 ? m : m + z * fc.sd[i]));
  });
}

export function residualSigma(residuals: number[], nParams = 0): number {
  let s = 0, k = 0;
  for (const r of residuals) {
    if (Number.isFinite(r)) {
      s += r * r;
      k++;
    }
  }
  const dof = Math.max(1, k - nParams);
  return k ? Math.sqrt(s / dof) : 0;
}
