import { jsonDatasetRows } from '../api/routes/helpers';
import { DEFAULT_HORIZON, forecastInputSchema, type ForecastInput } from '../api/schemas/forecast';
import { backtestRows, type BacktestAnswer, type BacktestRequest } from './backtest-rows';
import { parseUploadedFile, type Row } from './datasets';
import { AppError } from './errors';
import { readStagedJson } from './staged-json';
import { checkedSeries, horizonDefaulted, horizonOf, packSeries, type PackedSeries, type SeriesColumns, type SeriesRefusalCode } from './series-checks';

/** A forecast or backtest body without its rows, as the route's schema reads it. */
export type SeriesFields = Omit<ForecastInput, 'data'>;

/** The rows' VALIDATION_ERROR in the route's code, as the route's own row reading answers it. */
export function inRouteCode(err: unknown, code: SeriesRefusalCode): unknown {
  return err instanceof AppError && err.code === 'VALIDATION_ERROR' && code !== 'VALIDATION_ERROR' ? new AppError(code, 400, err.detail) : err;
}

/** An uploaded file's rows as datasetRows reads them for a series route (the item_id column kept as text); refusals in the route's code. */
function fileRows(file: { name: string | null; mimetype: string | null; content: Buffer }, columns: SeriesColumns, code: SeriesRefusalCode): Row[] {
  try {
    return parseUploadedFile(file, { textColumns: columns.itemId ? [columns.itemId] : [] });
  } catch (err) {
    throw inRouteCode(err, code);
  }
}

/**
 * A forecast or backtest's JSON body read as the API reads a small one, in its order: the parser's
 * checks, the route's schema, the horizon's aliases, the rows' checks. `code` is the route's refusal
 * code (INVALID_INPUT for a forecast, VALIDATION_ERROR for a backtest).
 */
function readSeriesJson(bytes: Uint8Array, request: { method: string; path: string }, code: SeriesRefusalCode) {
  const { body, fingerprint } = readStagedJson(bytes, forecastInputSchema, request, code);
  const { data, ...fields } = body;
  const horizon = horizonOf(fields, DEFAULT_HORIZON, code);
  let rows: Row[];
  try {
    rows = jsonDatasetRows(data, 'data');
  } catch (err) {
    throw inRouteCode(err, code);
  }
  const columns: SeriesColumns = { target: fields.target, timestamp: fields.timestamp, itemId: fields.item_id };
  return { fields, rows, columns, horizon, fingerprint };
}

/** What an engine thread answers for a large forecast body: its fields, its series prepared, the Idempotency-Key fingerprint. */
export interface ReadForecastBody {
  fields: SeriesFields;
  prepared: PackedSeries;
  fingerprint: string;
}

/**
 * A forecast's JSON body read by an engine thread exactly as the API reads a small one, down to its
 * series checked, prepared and packed in `parts` (services/series-checks.ts): the API's event loop gets
 * a summary of each series and bytes it hands on, where it parsed and walked every row. Refusals are the same AppErrors, thrown.
 */
export function readForecastBody(bytes: Uint8Array, request: { method: string; path: string; parts: number }): ReadForecastBody {
  const { fields, rows, columns, fingerprint } = readSeriesJson(bytes, request, 'INVALID_INPUT');
  return { fields, prepared: packSeries(checkedSeries(rows, columns, 'INVALID_INPUT'), request.parts), fingerprint };
}

/** A forecast's uploaded file read on an engine thread, down to its series checked, prepared and packed: its rows never come back to the event loop. */
export function readForecastFile(file: { name: string | null; mimetype: string | null; content: Buffer }, columns: SeriesColumns, parts: number): PackedSeries {
  return packSeries(checkedSeries(fileRows(file, columns, 'INVALID_INPUT'), columns, 'INVALID_INPUT'), parts);
}

/** What an engine thread answers for a large backtest body: its fields, its answer, the Idempotency-Key fingerprint. */
export interface ReadBacktestBody {
  fields: SeriesFields;
  answer: BacktestAnswer;
  fingerprint: string;
}

/** A backtest's JSON body read by an engine thread exactly as the API reads a small one, then backtested there (services/backtest-rows.ts). */
export function readBacktestBody(bytes: Uint8Array, request: { method: string; path: string }): ReadBacktestBody {
  const { fields, rows, columns, horizon, fingerprint } = readSeriesJson(bytes, request, 'VALIDATION_ERROR');
  const answer = backtestRows(rows, { ...columns, horizon, horizonDefaulted: horizonDefaulted(fields), seasonLength: fields.season_length });
  return { fields, answer, fingerprint };
}

/** A backtest's uploaded file read and backtested on an engine thread: its rows never come back to the event loop. */
export function readBacktestFile(file: { name: string | null; mimetype: string | null; content: Buffer }, request: BacktestRequest): BacktestAnswer {
  return backtestRows(fileRows(file, request, 'VALIDATION_ERROR'), request);
}
