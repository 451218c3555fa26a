import { jsonDatasetRows } from '../api/routes/helpers';
import { trainingInputSchema, type TrainingInput } from '../api/schemas/models';
import type { PlanName } from '../config/plans';
import { analyseDataset, TabularDataError } from '../engines/tabular';
import { gzipJsonSync } from './compression';
import { checkedTrainingEngine, dataRefusal } from './datasets';
import { readStagedJson } from './staged-json';
import type { AnalysedTrainingSet } from './models';

/** A new model's request body without its rows, as the route's schema reads it. */
export type TrainingFields = Omit<TrainingInput, 'data'>;

/** What an engine thread answers for a large training body: its fields, its rows ready to store, the Idempotency-Key fingerprint. */
export interface ReadTrainingBody {
  fields: TrainingFields;
  dataset: Omit<AnalysedTrainingSet, 'context'> & { context: Uint8Array };
  fingerprint: string;
}

/**
 * A new model's JSON body read by an engine thread exactly as the API reads and checks a small one
 * (the parser's checks, the route's schema, the rows' checks, then createModel's: the engine, the
 * plan's rows, the engine's analysis of the target), ending in the rows as the model's context stores
 * them (gzipped JSON): the API's event loop gets a few megabytes of gzip where it parsed, walked,
 * validated and serialised the whole body (services/models.ts createModel takes it as it is).
 * Refusals are the same AppErrors, thrown.
 */
export function readTrainingBody(bytes: Uint8Array, request: { method: string; path: string; plan: PlanName }): ReadTrainingBody {
  const { body, fingerprint } = readStagedJson(bytes, trainingInputSchema, request);
  const { data, ...fields } = body;
  const rows = jsonDatasetRows(data, 'data');
  checkedTrainingEngine(request.plan, fields.engine, rows.length);
  let task: AnalysedTrainingSet['task'];
  try {
    task = analyseDataset(rows, { target: fields.target, task: fields.task }).task;
  } catch (err) {
    throw err instanceof TabularDataError ? dataRefusal(err) : err;
  }
  return {
    fields,
    // gzipped here rather than on the event loop
    dataset: { rowCount: rows.length, task, context: gzipJsonSync(rows) },
    fingerprint,
  };
}
