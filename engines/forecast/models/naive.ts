/** Naive, seasonal naive and drift benchmarks. */
import { FittedModel, ForecastModel, ModelForecast, residualSigma } from './types';

export function fitNaive(y: number[]): FittedModel {
  const n = y.length;
  const residuals = y.map((v, t) => (t === 0 ? NaN : v - y[t - 1]));
  const sigma = residualSigma(residuals);
  return {
    name: 'Naive',
    residuals,
    predict: (h: number): ModelForecast => ({
      mean: Array.from({ length: h }, () => y[n - 1]),
      sd: Array.from({ length: h }, (_, i) => sigma * Math.sqrt(i + 1)),
    }),
  };
}

export function fitSeasonalNaive(y: number[], m: number): FittedModel {
  const n = y.length;
  if (m <= 1 || n < m) return { ...fitNaive(y), name: 'SeasonalNaive' };
  const residuals = y.map((v, t) => (t < m ? NaN : v - y[t - m]));
  const sigma = residualSigma(residuals);
  return {
    name: 'SeasonalNaive',
    residuals,
    predict: (h: number): ModelForecast => ({
      mean: Array.from({ length: h }, (_, i) => y[n - m + (i % m)]),
      sd: Array.from({ length: h }, (_, i) => sigma * Math.sqrt(Math.floor(i / m) + 1)),
    }),
  };
}

export function fitDrift(y: number[]): FittedModel {
  const n = y.length;
  const slope = n > 1 ? (y[n - 1] - y[0]) / (n - 1) : 0;
  const residuals = y.map((v, t) => (t === 0 ? NaN : v - y[t - 1] - slope));
  const sigma = residualSigma(residuals, 1);
  return {
    name: 'Drift',
    residuals,
    predict: (h: number): ModelForecast => ({
      mean: Array.from({ length: h }, (_, i) => y[n - 1] + (i + 1) * slope),
      sd: Array.from({ length: h }, (_, i) => sigma * Math.sqrt((i + 1) * (1 + (i + 1) / Math.max(1, n - 1)))),
    }),
  };
}

export class Naive implements ForecastModel {
  readonly name = 'Naive';
  fit(y: number[]): FittedModel {
    return fitNaive(y);
  }
}

export class SeasonalNaive implements ForecastModel {
  readonly name = 'SeasonalNaive';
  constructor(private readonly seasonLength: number) {}
  fit(y: number[]): FittedModel {
    return fitSeasonalNaive(y, this.seasonLength);
  }
}

export class RandomWalkWithDrift implements ForecastModel {
  readonly name = 'Drift';
  fit(y: number[]): FittedModel {
    return fitDrift(y);
  }
}
