/**
 * Series preparation: rows → validated, sorted, regular series (one per item id).
 */
import {
  daysInMonth,
  formatTimestamp,
  inferInterval,
  Interval,
  parseTimestamp,
  seasonLengthOf,
  TimestampFormat,
} from './calendar';
import { SeriesError } from './errors';

export type Row = Record<string, unknown>;

export interface SeriesSpec {
  target: string;
  timestamp?: string;
  itemId?: string;
}

export const MIN_POINTS = 10;

export interface PreparedSeries {
  /** item id (null when the rows hold a single series without an id column) */
  id: string | null;
  /** timestamps, sorted, in the input's format (YYYY-MM, YYYY-MM-DD, ISO date-time with Z, or the integer position) */
  timestamps: string[];
  /** the same timestamps as UTC milliseconds; for `format: 'position'`, the positions themselves */
  timeMs: number[];
  values: number[];
  interval: Interval;
  /** candidate season length from the interval (1 = none); a seasonality test decides on its use */
  seasonLength: number;
  /** format of the input timestamps, mirrored by the future timestamps */
  format: TimestampFormat;
  /** whether the input carried fractional seconds */
  millis: boolean;
  /** number of missing target values that were filled by linear interpolation */
  filled: number;
}

function isMissing(v: unknown): boolean {
  return v === null || v === undefined || (typeof v === 'string' && v.trim() === '') ||
    (typeof v === 'number' && Number.isNaN(v));
}

/** Parses a target cell: a finite number, null for missing, undefined for non-numeric. */
/**
 * Largest magnitude of a series value: the members' likelihoods square the values (and sum the
 * squares over the series), which overflows past it; the tabular engine's targets have the same bound.
 */
export const MAX_VALUE_MAGNITUDE = 1e150;

export function parseNumber(v: unknown): number | null | undefined {
  if (isMissing(v)) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    const s = v.trim();
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return undefined;
    const x = Number(s);
    return Number.isFinite(x) ? x : undefined;
  }
  return undefined;
}

/**
 * The one column whose every non-empty value parses as a timestamp; null when none or several.
 * Columns of dates are preferred: integer columns (time positions) are considered only when no
 * column holds dates, since integers are also what counts and codes look like.
 */
export function inferTimestampColumn(rows: Row[], exclude: string[]): string | null {
  const skip = new Set(exclude);
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (!seen.has(key)) {
        seen.add(key);
        if (!skip.has(key)) columns.push(key);
      }
    }
  }
  const calendar: string[] = [];
  const positions: string[] = [];
  for (const col of columns) {
    let any = false;
    let dates = false;
    let ok = true;
    for (const row of rows) {
      const v = row[col];
      if (isMissing(v)) continue;
      const ts = parseTimestamp(v);
      if (ts === null) {
        ok = false;
        break;
      }
      any = true;
      dates ||= ts.format !== 'position';
    }
    if (ok && any) (dates ? calendar : positions).push(col);
  }
  const found = calendar.length > 0 ? calendar : positions;
  return found.length === 1 ? found[0] : null;
}

/**
 * Splits rows into series (by `itemId` when given, in order of first appearance), sorts each by
 * timestamp and validates it. Throws a SeriesError naming the series and the reason.
 */
export function prepareSeries(rows: Row[], spec: SeriesSpec): PreparedSeries[] {
  if (!Array.isArray(rows) || rows.length === 0) {
    throw new SeriesError('TOO_SHORT', `no rows: at least ${MIN_POINTS} points are needed`);
  }
  const target = spec.target;
  if (!rows.some((r) => r !== null && typeof r === 'object' && target in r)) {
    throw new SeriesError('MISSING_COLUMN', `target column "${target}" is missing`);
  }
  if (spec.itemId !== undefined && !rows.some((r) => spec.itemId! in r)) {
    throw new SeriesError('MISSING_COLUMN', `item id column "${spec.itemId}" is missing`);
  }
  let tsCol = spec.timestamp;
  if (tsCol === undefined) {
    const exclude = [target];
    if (spec.itemId !== undefined) exclude.push(spec.itemId);
    const inferred = inferTimestampColumn(rows, exclude);
    if (inferred === null) {
      throw new SeriesError(
        'MISSING_COLUMN',
        'no timestamp column given and none could be inferred (exactly one column must hold dates)',
      );
    }
    tsCol = inferred;
  } else if (!rows.some((r) => tsCol! in r)) {
    throw new SeriesError('MISSING_COLUMN', `timestamp column "${tsCol}" is missing`);
  }

  const groups = new Map<string | null, Row[]>();
  for (const row of rows) {
    let key: string | null = null;
    if (spec.itemId !== undefined) {
      const raw = row[spec.itemId];
      if (isMissing(raw)) {
        throw new SeriesError('MISSING_COLUMN', `a row has no value in the item id column "${spec.itemId}"`);
      }
      key = String(raw);
    }
    let g = groups.get(key);
    if (!g) {
      g = [];
      groups.set(key, g);
    }
    g.push(row);
  }
  const out: PreparedSeries[] = [];
  for (const [id, g] of groups) out.push(prepareOne(g, id, target, tsCol));
  return out;
}

/**
 * Whether an integer position reads as a date written YYYYMMDD (20260131): such dates are integer
 * positions, regular only within a month, so a series crossing a month was refused as "irregular
 * positions: steps of 1 and 70" with nothing to say why (a thirteenth probe).
 */
function isCompactDate(position: number): boolean {
  if (!Number.isInteger(position) || position < 10000101 || position > 99991231) return false;
  const year = Math.floor(position / 10000);
  const month = Math.floor(position / 100) % 100;
  const day = position % 100;
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

const COMPACT_DATES_HINT = '; the values look like dates written YYYYMMDD, which are read as integer positions: write them as YYYY-MM-DD';

function prepareOne(rows: Row[], id: string | null, target: string, tsCol: string): PreparedSeries {
  const pts: { ms: number; v: number | null }[] = [];
  const formats = new Set<TimestampFormat>();
  let millis = false;
  for (let i = 0; i < rows.length; i++) {
    const raw = rows[i][tsCol];
    const ts = parseTimestamp(raw);
    if (ts === null) {
      throw new SeriesError(
        'UNPARSEABLE_TIMESTAMP',
        `timestamp ${JSON.stringify(raw)} in column "${tsCol}" is not a date (accepted: YYYY-MM, YYYY-MM-DD, ISO 8601 date-time, or integer time positions)`,
        id,
      );
    }
    formats.add(ts.format);
    millis ||= ts.millis;
    const v = parseNumber(rows[i][target]);
    if (v === undefined) {
      throw new SeriesError(
        'NON_NUMERIC_TARGET',
        `target "${target}" has the non-numeric value ${JSON.stringify(rows[i][target])}`,
        id,
      );
    }
    if (v !== null && !(Math.abs(v) <= MAX_VALUE_MAGNITUDE)) {
      throw new SeriesError('VALUE_OUT_OF_RANGE', `target "${target}" holds ${v}, beyond ±${MAX_VALUE_MAGNITUDE} (its square overflows, so no model can be fitted)`, id);
    }
    pts.push({ ms: ts.ms, v });
  }
  const positions = formats.has('position');
  if (positions && formats.size > 1) {
    throw new SeriesError(
      'UNPARSEABLE_TIMESTAMP',
      `column "${tsCol}" mixes integer time positions and dates within the series; use one or the other`,
      id,
    );
  }
  pts.sort((a, b) => a.ms - b.ms);
  for (let i = 1; i < pts.length; i++) {
    if (pts[i].ms === pts[i - 1].ms) {
      const shown = positions ? String(pts[i].ms) : new Date(pts[i].ms).toISOString();
      throw new SeriesError('DUPLICATE_TIMESTAMP', `timestamp ${shown} appears more than once`, id);
    }
  }
  // leading and trailing missing targets are dropped; interior ones are interpolated
  let a = 0;
  let b = pts.length - 1;
  while (a <= b && pts[a].v === null) a++;
  while (b >= a && pts[b].v === null) b--;
  const kept = pts.slice(a, b + 1);
  if (kept.length < MIN_POINTS) {
    throw new SeriesError(
      'TOO_SHORT',
      `${kept.length} point(s) with a target value; at least ${MIN_POINTS} are needed`,
      id,
    );
  }
  const timeMs = kept.map((p) => p.ms);
  const res = inferInterval(timeMs, positions);
  if (!res.ok) throw new SeriesError('IRREGULAR_INTERVAL', res.reason + (positions && timeMs.every(isCompactDate) ? COMPACT_DATES_HINT : ''), id);
  const known = kept.filter((p) => p.v !== null).length;
  if (known < MIN_POINTS) {
    throw new SeriesError('TOO_SHORT', `${known} point(s) with a target value; at least ${MIN_POINTS} are needed`, id);
  }
  const values: number[] = [];
  let filled = 0;
  for (let i = 0; i < kept.length; i++) {
    const v = kept[i].v;
    if (v !== null) {
      values.push(v);
      continue;
    }
    let j = i + 1;
    while (kept[j].v === null) j++;
    const prev = values[i - 1];
    const next = kept[j].v as number;
    values.push(prev + ((next - prev) * 1) / (j - i + 1));
    filled++;
  }
  let format: TimestampFormat = 'month';
  if (positions) format = 'position';
  else if (formats.has('datetime')) format = 'datetime';
  else if (formats.has('date')) format = 'date';
  return {
    id,
    timestamps: timeMs.map((t) => formatTimestamp(t, format, millis)),
    timeMs,
    values,
    interval: res.interval,
    seasonLength: seasonLengthOf(res.interval),
    format,
    millis,
    filled,
  };
}
