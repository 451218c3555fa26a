import { jsonDatasetRows, predictBodyRows } from '../api/routes/helpers';
import { predictInputSchema } from '../api/schemas/models';
import type { Row } from './datasets';
import { readStagedJson } from './staged-json';

/**
 * A prediction's JSON body read exactly as the API reads a small one (the parser's checks, the
 * route's schema, the rows' checks, the Idempotency-Key fingerprint of the parsed body), for an engine
 * thread that reads a large one off the event loop (services/staged-bodies.ts). Refusals are the same
 * AppErrors, thrown.
 */
export function readPredictionBody(bytes: Uint8Array, request: { method: string; path: string }): { rows: Row[]; fingerprint: string } {
  const { body, fingerprint } = readStagedJson(bytes, predictInputSchema, request);
  return { rows: jsonDatasetRows(predictBodyRows(body), 'rows'), fingerprint };
}
