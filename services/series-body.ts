import { zodToAppError } from '../api/middleware/errors';
import { jsonDatasetRows } from '../api/routes/helpers';
import { DEFAULT_HORIZON, forecastInputSchema, type ForecastInput } from '../api/schemas/forecast';
import { SeriesError } from '../engines/forecast';
import { AppError } from './errors';
import { requestFingerprint } from './idempotency';
import { parseJsonBytes } from './json';
import { parseUploadedFile, type Row } from './datasets';
import { checkSeriesRows, horizonOf, prepareSeriesRows, seriesRefusal, type PreparedRequest, type SeriesColumns, type SeriesRefusalCode } from './series-checks';

/** The rows' checks (services/series-checks.ts) and their series prepared, on this thread; refusals in the route's `code`. */
export function checkedSeries(rows: Row[], columns: SeriesColumns, code: SeriesRefusalCode): PreparedRequest {
  checkSeriesRows(rows, columns, code);
  try {
    return prepareSeriesRows(rows, columns);
  } catch (err) {
    throw err instanceof SeriesError ? seriesRefusal(err, code) : err;
  }
}

/**
 * A forecast or backtest's uploaded file (CSV or JSON rows) read on an engine thread as datasetRows
 * reads it (the item_id column kept as text), then checked and prepared: its rows never come back to
 * the API's event loop. A refusal of the file that is a VALIDATION_ERROR answers in the route's `code`.
 */
export function readSeriesFile(file: { name: string | null; mimetype: string | null; content: Buffer }, columns: SeriesColumns, code: SeriesRefusalCode): PreparedRequest {
  let rows: Row[];
  try {
    rows = parseUploadedFile(file, { textColumns: columns.itemId ? [columns.itemId] : [] });
  } catch (err) {
    throw inRouteCode(err, code);
  }
  return checkedSeries(rows, columns, code);
}

/** The rows' VALIDATION_ERROR in the route's code, as the route's own row reading answers it. */
export function inRouteCode(err: unknown, code: SeriesRefusalCode): unknown {
  return err instanceof AppError && err.code === 'VALIDATION_ERROR' && code !== 'VALIDATION_ERROR' ? new AppError(code, 400, err.detail) : err;
}

/** A forecast or backtest body without its rows, as the route's schema reads it. */
export type SeriesFields = Omit<ForecastInput, 'data'>;

/** What an engine thread answers for a large forecast or backtest body: its fields, its series prepared, the Idempotency-Key fingerprint. */
export interface ReadSeriesBody {
  fields: SeriesFields;
  prepared: PreparedRequest;
  fingerprint: string;
}

/**
 * A forecast or backtest JSON body read by an engine thread exactly as the API reads and checks a
 * small one (the parser's checks, the route's schema, the horizon's aliases, the rows' checks, the
 * columns' roles and the series' preparation, in that order), ending in the prepared series: the API's
 * event loop gets the series' numbers and timestamps where it parsed and walked every row. `code` is
 * the route's refusal code (INVALID_INPUT for a forecast, VALIDATION_ERROR for a backtest). Refusals
 * are the same AppErrors, thrown.
 */
export function readSeriesBody(bytes: Uint8Array, request: { method: string; path: string; code: SeriesRefusalCode }): ReadSeriesBody {
  const { code } = request;
  const value = parseJsonBytes(bytes);
  const parsed = forecastInputSchema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, 'body', code);
  const { data, ...fields } = parsed.data;
  horizonOf(fields, DEFAULT_HORIZON, code);
  let rows: Row[];
  try {
    rows = jsonDatasetRows(data, 'data');
  } catch (err) {
    throw inRouteCode(err, code);
  }
  const prepared = checkedSeries(rows, { target: fields.target, timestamp: fields.timestamp, itemId: fields.item_id }, code);
  return { fields, prepared, fingerprint: requestFingerprint({ method: request.method, path: request.path, body: value, file: null }) };
}
