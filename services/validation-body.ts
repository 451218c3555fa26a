import { jsonDatasetRows } from '../api/routes/helpers';
import { trainingInputSchema } from '../api/schemas/models';
import type { PlanName } from '../config/plans';
import { parseUploadedFile, TRAINING_SEED } from './datasets';
import { readStagedJson } from './staged-json';
import type { TrainingFields } from './training-body';
import { validateRows, type ValidationReport, type ValidationRequest } from './validation-rows';

/** What an engine thread answers for a large validation body: its fields, its report, the Idempotency-Key fingerprint. */
export interface ReadValidationBody {
  fields: TrainingFields;
  report: ValidationReport;
  fingerprint: string;
}

/**
 * A validation's JSON body read by an engine thread exactly as the API reads and checks a small one
 * (the parser's checks, the route's schema, the rows' checks), then validated there (validateRows): the
 * API's event loop gets the report where it parsed and walked the whole body. Refusals are the same
 * AppErrors, thrown.
 */
export function readValidationBody(bytes: Uint8Array, request: { method: string; path: string; plan: PlanName }): ReadValidationBody {
  const { body, fingerprint } = readStagedJson(bytes, trainingInputSchema, request);
  const { data, ...fields } = body;
  const rows = jsonDatasetRows(data, 'data');
  const report = validateRows(rows, { plan: request.plan, engine: fields.engine, target: fields.target, task: fields.task, seed: TRAINING_SEED });
  return { fields, report, fingerprint };
}

/** A validation's uploaded file (CSV or JSON rows), read as datasetRows reads it and validated on an engine thread: its rows never come back to the event loop. */
export function readValidationFile(file: { name: string | null; mimetype: string | null; content: Buffer }, request: ValidationRequest): ValidationReport {
  return validateRows(parseUploadedFile(file), request);
}
