import type { SeriesForecast } from '../engines/forecast';
import { FORECAST_ENGINE, futureWithinCalendar } from '../engines/forecast';
import { findEngine } from '../engines/catalogue';
import { releaseReservation, reserveCredits, type CallStores } from './credits';
import type { Row } from './datasets';
import type { EnginePool, UploadedFileBytes } from './engine-pool';
import type { FreeCall } from './free-work';
import type { BacktestAnswer, BacktestRequest } from './backtest-rows';
import { AppError } from './errors';
import { checkSeriesRows, defaultHorizonNote, type PackedSeries } from './series-checks';

export interface ForecastRequest {
  /** The request's series, checked and prepared on a thread (EnginePool.prepareForecast, or the thread that read a large body or file). */
  prepared: PackedSeries;
  target: string;
  horizon: number;
  itemId?: string;
  quantiles: number[];
  pointEstimate: 'mean' | 'median';
  /** Our addition: the season (steps per cycle); inferred from a calendar, none for integer positions. */
  seasonLength?: number;
  /** The caller sent no horizon: `horizon` is the route's default, and a refusal because of it says so. */
  horizonDefaulted?: boolean;
}

/** What shapes a forecast's answer: its columns and which statistic is the point estimate. */
export type AnswerShape = Pick<ForecastRequest, 'target' | 'itemId' | 'quantiles' | 'pointEstimate'>;

/**
 * A text cell a spreadsheet would run as a formula (=, +, -, @, tab or carriage return first) gets a
 * leading apostrophe (OWASP's CSV injection advice); numbers, negative ones included, stay numbers.
 */
export function neutraliseCell(value: unknown): unknown {
  if (typeof value !== 'string' || !/^[=+\-@\t\r]/.test(value)) return value;
  return value.trim() !== '' && Number.isFinite(Number(value)) ? value : `'${value}`;
}

/** The header of a forecast's CSV answer: the timestamp column, the item column, `<target>_prediction`, `quantile_<q>`…. */
function answerColumns(request: AnswerShape, timestampColumn: string): string[] {
  const predictionColumn = `${request.target}_prediction`;
  const quantileColumns = request.quantiles.map((q) => `quantile_${String(q)}`);
  return [timestampColumn, ...(request.itemId ? [request.itemId] : []), predictionColumn, ...quantileColumns].map((f) => String(neutraliseCell(f)));
}

/**
 * The answer's columns must have distinct names: a timestamp or item column named like an answer
 * column (`quantile_0.5`, `y_prediction`) gave a header naming one column twice, and a client reading
 * the CSV by name took the timestamps for the quantile (a seventh probe). Refused before any charge.
 */
function refuseAmbiguousColumns(request: AnswerShape, timestampColumn: string): void {
  const columns = answerColumns(request, timestampColumn);
  const repeated = columns.find((name, i) => columns.indexOf(name) !== i);
  if (repeated === undefined) return;
  throw new AppError(
    'INVALID_INPUT',
    400,
    `The answer would name two columns "${repeated}": the timestamp and item_id columns must not be named like the answer's own columns (<target>_prediction, quantile_<q>); rename the column in the data.`,
    { reason: 'COLUMN_NAME_COLLISION' },
  );
}

/** A text cell as papaparse writes it: quoted when it holds a quote, the comma, a line break or a BOM, or starts or ends with a space. */
function csvText(value: string): string {
  const escaped = value.replace(/"/g, '""');
  // A cell holding another separator a spreadsheet may split on (`;` in many locales, a tab, `|`) is
  // quoted too: unquoted, `a;=1+1` became a cell `=1+1` there, past the leading-character guard (a
  // twenty-second probe).
  const quoted = /[",;\t|\r\n\uFEFF]/.test(value) || escaped.startsWith(' ') || escaped.endsWith(' ');
  return quoted ? `"${escaped}"` : escaped;
}

/** A cell: numbers as `String(n)` (never quoted), text through csvText, nothing as an empty cell. */
function csvCell(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'number' ? String(value) : csvText(String(value));
}

/**
 * The answer's CSV, cell for cell what papaparse's `unparse` wrote (header included), built line by
 * line: `unparse` examined every number as text for quoting, and took 16 s of the API's event loop
 * for a 270 MB answer (150 series × 1,000 steps × 99 quantiles), during which every other call of the
 * process waited (a thirteenth probe). Numbers never need quoting.
 */
export function forecastCsv(request: AnswerShape, timestampColumn: string, forecasts: SeriesForecast[]): string {
  const lines: string[] = [answerColumns(request, timestampColumn).map(csvText).join(',')];
  const quantileKeys = request.quantiles.map((q) => String(q));
  for (const f of forecasts) {
    const point = request.pointEstimate === 'median' ? f.median : f.mean;
    const item = request.itemId ? `,${csvCell(neutraliseCell(f.id ?? ''))}` : '';
    const quantiles = quantileKeys.map((q) => f.quantiles[q]);
    f.timestamps.forEach((ts, step) => {
      const cells = [csvCell(neutraliseCell(ts)) + item, csvCell(point[step])];
      for (const values of quantiles) cells.push(csvCell(values?.[step]));
      lines.push(cells.join(','));
    });
  }
  return lines.join('\n');
}

/**
 * The most numbers one forecast answers (series × horizon × (1 + quantiles)): about 40 MB of CSV. The
 * answer is built in the API process, and without a bound its size followed the credits, not the body:
 * a thirteenth probe's 5.8 MB body (150 series of 1,000 points, horizon 1,000, 99 quantiles) answered
 * 270 MB, grew the API process from 0.7 to 3.9 GB and held its event loop (every other call) for 11 s.
 */
export const MAX_FORECAST_ANSWER_VALUES = 2_000_000;

function refuseOversizedAnswer(series: number, horizon: number, quantiles: number): void {
  const values = series * horizon * (1 + quantiles);
  if (values <= MAX_FORECAST_ANSWER_VALUES) return;
  throw new AppError(
    'INVALID_INPUT',
    400,
    `The answer would hold ${values} numbers (${series} series × horizon ${horizon} × ${1 + quantiles} columns), more than the ${MAX_FORECAST_ANSWER_VALUES} one call answers; ask for fewer quantiles or a shorter horizon, or split the series over several calls.`,
    { reason: 'ANSWER_TOO_LARGE', limit: MAX_FORECAST_ANSWER_VALUES, values },
  );
}

export interface ForecastResult {
  csv: string;
  charged: number;
  remaining: number;
  /** Held until the caller has the answer to send (settle) or the sweep gives it back. */
  reservationId: string;
}

/**
 * The free backtest of a request's rows or file (services/backtest-rows.ts backtestRows, on an engine
 * thread, as free work). The rows' checks that need no engine are made here first, so that they answer
 * before the free call waits for a thread.
 */
export async function runBacktest(pool: EnginePool, source: { rows: Row[] } | { file: UploadedFileBytes }, request: BacktestRequest, call: FreeCall): Promise<BacktestAnswer> {
  if ('file' in source) return pool.backtestFile(call, source.file, request);
  checkSeriesRows(source.rows, request, 'VALIDATION_ERROR');
  return pool.backtest(call, source.rows, request);
}

/**
 * Checks the prepared series against the horizon, prices the call (horizon × series, whatever the
 * history length), reserves the credits before any computation, forecasts in the engine pool, and
 * refunds a failed computation.
 */
export async function runForecast(
  stores: CallStores,
  pool: EnginePool,
  request: ForecastRequest,
  billing: { accountId: string; workspaceId: string; httpRequestId: string; holdSeconds: number },
): Promise<ForecastResult> {
  const { prepared } = request;
  const short = prepared.series.find((s) => s.points < request.horizon);
  if (short) {
    throw new AppError(
      'INVALID_INPUT',
      400,
      `${short.id === null ? 'The series' : `Series "${short.id}"`} has ${short.points} points, fewer than the horizon ${request.horizon}; send at least as many points as the horizon (preferably several times more).${defaultHorizonNote(request)}`,
      { reason: 'SHORTER_THAN_HORIZON' },
    );
  }
  const beyond = prepared.series.find((s) => !futureWithinCalendar(s.lastTimeMs, s.interval, s.format, request.horizon));
  if (beyond) {
    const name = beyond.id === null ? 'The series' : `Series "${beyond.id}"`;
    if (beyond.format === 'position') {
      throw new AppError('INVALID_INPUT', 400, `${name} would be forecast past the integer position ${Number.MAX_SAFE_INTEGER} (2^53 - 1), beyond which positions cannot be told apart; shorten the horizon.`, {
        reason: 'POSITION_OUT_OF_RANGE',
      });
    }
    throw new AppError('INVALID_INPUT', 400, `${name} would be forecast past the year 9999, which dates cannot express; shorten the horizon.`, { reason: 'PAST_YEAR_9999' });
  }
  refuseAmbiguousColumns(request, prepared.timestampColumn);
  refuseOversizedAnswer(prepared.series.length, request.horizon, request.quantiles.length);
  const price = findEngine(FORECAST_ENGINE.id)?.creditPricePerRow ?? FORECAST_ENGINE.creditPricePerPoint;
  const cost = request.horizon * prepared.series.length * price;
  const reservation = await reserveCredits(stores, { ...billing, amount: cost, operation: 'forecast', reference: billing.httpRequestId });
  try {
    const timestampColumn = prepared.timestampColumn;
    const forecasts = await pool.forecastPrepared(prepared, { horizon: request.horizon, quantiles: request.quantiles, seasonLength: request.seasonLength });
    // every cell of the paid answer, the quantile columns included, is a number
    const finite = forecasts.every(
      (f) => f.mean.every(Number.isFinite) && f.median.every(Number.isFinite) && request.quantiles.every((q) => f.quantiles[String(q)]?.every(Number.isFinite) ?? false),
    );
    if (!finite) throw new Error('the engine produced a non-finite forecast');
    return { csv: forecastCsv(request, timestampColumn, forecasts), charged: cost, remaining: reservation.remaining, reservationId: reservation.id };
  } catch (err) {
    // Gives the credits back now rather than at the sweep; the sweep stays the guarantee.
    await releaseReservation(stores.em, reservation.id);
    const detail = err instanceof Error ? err.message : String(err);
    throw new AppError('FORECAST_FAILED', 422, `The forecast could not be computed: ${detail}. Nothing was charged.`);
  }
}
