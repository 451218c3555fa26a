import { deserialize, serialize } from 'node:v8';
import { inferTimestampColumn, prepareSeries, SeriesError, type Interval, type PreparedSeries, type TimestampFormat } from '../engines/forecast';
import type { Row } from './datasets';
import { AppError } from './errors';

/**
 * The checks a forecast or backtest body's series pass before any engine work, and their preparation:
 * one module free of the database and the pool, so that an engine thread reading a large body
 * (services/series-body.ts) makes exactly the checks the API makes of a small one.
 */

/** The code each series route answers a body's refusals with (the contract's, per route). */
export type SeriesRefusalCode = 'INVALID_INPUT' | 'VALIDATION_ERROR';

/** A forecast or backtest body's horizon fields, as the route's schema reads them. */
export interface HorizonFields {
  horizon?: number;
  prediction_length?: number;
}

/** The horizon asked for: `horizon` or its alias `prediction_length` (the same value when both), or the default. */
export function horizonOf(body: HorizonFields, defaultHorizon: number, code: SeriesRefusalCode): number {
  if (body.horizon !== undefined && body.prediction_length !== undefined && body.horizon !== body.prediction_length) {
    throw new AppError(code, 400, 'horizon and prediction_length are aliases; give one, or the same value.');
  }
  return body.horizon ?? body.prediction_length ?? defaultHorizon;
}

/** The caller sent no horizon: a refusal caused by the default says so. */
export const horizonDefaulted = (body: HorizonFields): boolean => body.horizon === undefined && body.prediction_length === undefined;

/**
 * What a refusal caused by the horizon adds when the caller sent none: a series of 10 or 11 points (the
 * contract's minimum is 10) sent without a horizon was told it had "fewer than the horizon 12", a
 * number it never sent (a thirteenth probe).
 */
export function defaultHorizonNote(request: { horizon: number; horizonDefaulted?: boolean }): string {
  return request.horizonDefaulted ? ` No horizon was sent, so the default of ${request.horizon} applies; send a smaller horizon (or prediction_length).` : '';
}

/** A series the engine refuses: its message names the series and the reason; `code` is the route's. */
export function seriesRefusal(err: { code: string; message: string }, code: SeriesRefusalCode): AppError {
  return new AppError(code, 400, err.message, { reason: err.code });
}

/** The columns a series request names. */
export interface SeriesColumns {
  target: string;
  timestamp?: string;
  itemId?: string;
}

/**
 * The target, the timestamp and the item_id name three different columns: one column in two roles was
 * forecast all the same and charged (a ninth probe: item_id the target forecast each series' id as its
 * value, timestamp the target forecast the positions themselves).
 */
function refuseColumnInTwoRoles(request: SeriesColumns, code: SeriesRefusalCode): void {
  const roles: Array<[string, string | undefined]> = [
    ['target', request.target],
    ['timestamp', request.timestamp],
    ['item_id', request.itemId],
  ];
  for (let i = 0; i < roles.length; i++) {
    for (let j = i + 1; j < roles.length; j++) {
      const [first, a] = roles[i]!;
      const [second, b] = roles[j]!;
      if (a !== undefined && a === b) {
        throw new AppError(code, 400, `${first} and ${second} both name the column "${a}"; each names a column of its own.`, { reason: 'COLUMN_IN_TWO_ROLES' });
      }
    }
  }
}

/**
 * A numeric series identifier must be one JSON reads exactly: an integer beyond ±(2^53 - 1) is rounded
 * when parsed, so 9007199254740993 and 9007199254740992 became one series (400 DUPLICATE_TIMESTAMP
 * naming the other), and 12345678901234567890 was answered as 12345678901234567000, which the caller
 * cannot join back (a sixth probe). CSV files read the column as text already.
 */
function refuseInexactItemIds(rows: Row[], itemId: string | undefined, code: SeriesRefusalCode): void {
  if (itemId === undefined) return;
  for (const row of rows) {
    const value = Object.hasOwn(row, itemId) ? row[itemId] : undefined;
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
      throw new AppError(
        code,
        400,
        `The ${itemId} value ${String(value)} is an integer beyond ±${Number.MAX_SAFE_INTEGER} (2^53 - 1), which a JSON number cannot hold exactly: series would merge and be named otherwise than sent. Send the identifiers as strings.`,
        { reason: 'ITEM_ID_NOT_EXACT' },
      );
    }
  }
}

/** The request's checks of its columns and rows, made before the rows go to an engine thread or are prepared there. */
export function checkSeriesRows(rows: Row[], columns: SeriesColumns, code: SeriesRefusalCode): void {
  refuseColumnInTwoRoles(columns, code);
  refuseInexactItemIds(rows, columns.itemId, code);
}

/** Every series of a request, validated, sorted and gap-filled once; what forecasts and backtests compute on. */
export interface PreparedRequest {
  timestampColumn: string;
  series: PreparedSeries[];
}

/** Prepares the series (synchronous: on an engine thread); the engine's refusal is thrown as a SeriesError. */
export function prepareSeriesRows(rows: Row[], columns: SeriesColumns): PreparedRequest {
  const timestamp = columns.timestamp ?? inferTimestampColumn(rows, [columns.target, ...(columns.itemId ? [columns.itemId] : [])]);
  if (!timestamp) {
    throw new SeriesError('MISSING_COLUMN', 'no timestamp column: name it in `timestamp` (no column, or more than one, holds dates or integer positions)');
  }
  return { timestampColumn: timestamp, series: prepareSeries(rows, { target: columns.target, timestamp, itemId: columns.itemId }) };
}

/** The rows' checks and their series prepared, on this thread; refusals in the route's `code`. */
export function checkedSeries(rows: Row[], columns: SeriesColumns, code: SeriesRefusalCode): PreparedRequest {
  checkSeriesRows(rows, columns, code);
  try {
    return prepareSeriesRows(rows, columns);
  } catch (err) {
    throw err instanceof SeriesError ? seriesRefusal(err, code) : err;
  }
}

/** Cuts a list of series into `parts` contiguous runs of about equal total points (order kept). */
export function splitByPoints<T extends { values: ArrayLike<number> }>(series: T[], parts: number): T[][] {
  if (parts <= 1 || series.length <= 1) return [series];
  const total = series.reduce((sum, s) => sum + s.values.length, 0);
  const out: T[][] = [];
  let current: T[] = [];
  let done = 0;
  for (const s of series) {
    current.push(s);
    done += s.values.length;
    if (out.length < parts - 1 && done >= (total * (out.length + 1)) / parts) {
      out.push(current);
      current = [];
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** What the API reads of a prepared series: its name, its length and its last step (the checks against the horizon). */
export interface SeriesSummary {
  id: string | null;
  points: number;
  lastTimeMs: number;
  interval: Interval;
  format: TimestampFormat;
}

/**
 * A forecast's prepared series as the API holds them: a summary of each, and the series themselves in
 * `parts` of about equal points (one per engine thread), each in V8's serialisation, which the API hands
 * on without reading. Receiving a million points' timestamps and values as objects took the event loop
 * about 0.2 s, and sending them on 0.1 s more; their bytes are copied in milliseconds.
 */
export interface PackedSeries {
  timestampColumn: string;
  series: SeriesSummary[];
  parts: Uint8Array[];
}

/** Packs prepared series for the API (on the thread that prepared them). */
export function packSeries(prepared: PreparedRequest, parts: number): PackedSeries {
  return {
    timestampColumn: prepared.timestampColumn,
    series: prepared.series.map((s) => ({ id: s.id, points: s.values.length, lastTimeMs: s.timeMs[s.timeMs.length - 1] ?? Number.NaN, interval: s.interval, format: s.format })),
    parts: splitByPoints(prepared.series, Math.min(parts, prepared.series.length)).map((part) => new Uint8Array(serialize(part))),
  };
}

/** One part's series, as packSeries wrote them (on the thread that forecasts them). */
export function unpackSeries(part: Uint8Array): PreparedSeries[] {
  return deserialize(part) as PreparedSeries[];
}
