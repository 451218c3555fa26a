import { zodToAppError } from '../api/middleware/errors';
import { jsonDatasetRows, predictBodyRows } from '../api/routes/helpers';
import { predictInputSchema } from '../api/schemas/models';
import type { Row } from './datasets';
import { requestFingerprint } from './idempotency';
import { parseJsonBytes } from './json';

/**
 * A prediction's JSON body read exactly as the API reads a small one (the parser's checks, the
 * route's schema, the rows' checks, the Idempotency-Key fingerprint of the parsed body), for an engine
 * thread that reads a large one off the event loop (services/staged-bodies.ts). Refusals are the same
 * AppErrors, thrown.
 */
export function readPredictionBody(bytes: Uint8Array, request: { method: string; path: string }): { rows: Row[]; fingerprint: string } {
  const value = parseJsonBytes(bytes);
  const parsed = predictInputSchema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, 'body');
  const rows = jsonDatasetRows(predictBodyRows(parsed.data), 'rows');
  return { rows, fingerprint: requestFingerprint({ method: request.method, path: request.path, body: value, file: null }) };
}
