import { FORECAST_ENGINE } from './forecast';
import { TABULAR_ENGINE } from './tabular';

export type EngineTask = 'binary' | 'multiclass' | 'regression' | 'forecast';

export interface EngineEntry {
  id: string;
  /** The version new models are trained with. */
  version: string;
  /** Every version whose models this build still serves exactly as before (the current one included). */
  servableVersions: readonly string[];
  kind: 'tabular' | 'forecast';
  tasks: readonly EngineTask[];
  /** Credits per scored row (tabular) or per forecast point, i.e. horizon step × series (forecast). */
  creditPricePerRow: number;
  pricedPer: 'scored_row' | 'forecast_point';
  description: string;
  /** The engine new models get when a caller names none on a refresh. */
  isDefault: boolean;
}

/**
 * Every engine this build can train and serve. A model version records the engine id and version it
 * was trained with; new models get `version`, and a version is servable while its engine lists it in
 * `servableVersions` (otherwise ENGINE_MISMATCH).
 */
export const ENGINE_CATALOGUE: readonly EngineEntry[] = [
  {
    id: TABULAR_ENGINE.id,
    version: TABULAR_ENGINE.version,
    servableVersions: TABULAR_ENGINE.servableVersions,
    kind: 'tabular',
    tasks: TABULAR_ENGINE.tasks,
    creditPricePerRow: TABULAR_ENGINE.creditPricePerRow,
    pricedPer: 'scored_row',
    description: 'Gradient-boosted decision trees on histograms, with native missing values and categoricals, blended on small data with a regularised linear model (up to 4,000 rows) and a forest of extremely randomised trees (up to 500 rows).',
    isDefault: true,
  },
  {
    id: FORECAST_ENGINE.id,
    version: FORECAST_ENGINE.version,
    servableVersions: [FORECAST_ENGINE.version],
    kind: 'forecast',
    tasks: FORECAST_ENGINE.tasks,
    creditPricePerRow: FORECAST_ENGINE.creditPricePerPoint,
    pricedPer: 'forecast_point',
    description: 'Automatic statistical forecasting (ETS, Theta, ARIMA and their combination) with quantiles; zero-shot.',
    isDefault: false,
  },
];

export function findEngine(id: string): EngineEntry | undefined {
  return ENGINE_CATALOGUE.find((engine) => engine.id === id);
}

/** Whether this build serves models trained by engine `id` at `version`. */
export function canServe(id: string, version: string): boolean {
  return findEngine(id)?.servableVersions.includes(version) ?? false;
}
