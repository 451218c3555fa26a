import type { PlanName } from '../config/plans';
import { analyseDataset, TabularDataError, trialRun } from '../engines/tabular';
import { checkValidationRows, validationRefusal, type Row } from './datasets';

/** The answer of `POST /v1/datasets/validate`. */
export interface ValidationReport {
  valid: boolean;
  target: string;
  report: unknown;
  errors: Array<{ code: string; message: string }>;
  hint: string;
  trial: { verdict?: unknown; metrics?: unknown };
}

/** What a validation asks of its rows. */
export interface ValidationRequest {
  plan: PlanName;
  engine: string | undefined;
  target: string;
  task: 'classification' | 'regression' | undefined;
  seed: number;
}

/**
 * The free trial run, on an engine thread: the checks (the engine, the plan's rows: services/datasets.ts
 * checkValidationRows, thrown), the training report and a trial fit against the lazy answer. Data the
 * engine refuses is a report with valid false; a request it cannot even start (no target) is a 400,
 * thrown. Synchronous: the rows never leave the thread that holds them.
 */
export function validateRows(rows: Row[], request: ValidationRequest): ValidationReport {
  checkValidationRows(request.plan, request.engine, rows.length);
  try {
    const report = analyseDataset(rows, { target: request.target, task: request.task });
    const trial = trialRun(rows, { target: request.target, task: request.task, seed: request.seed });
    return { valid: true, target: request.target, report, errors: [], hint: trial.hint, trial: { verdict: trial.verdict, metrics: trial.metrics } };
  } catch (err) {
    if (!(err instanceof TabularDataError)) throw err;
    const refusal = validationRefusal(err);
    return { valid: false, target: request.target, report: null, errors: [refusal], hint: refusal.message, trial: {} };
  }
}
