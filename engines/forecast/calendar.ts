/**
 * Calendar pieces: timestamp parsing, interval inference, season length, future timestamps.
 * Pure functions; all times are UTC milliseconds, except for series without a calendar, whose
 * "times" are their integer positions (format and unit `position`).
 */

/** `position`: integer time positions (1, 2, 3, … or any regular integer step), no calendar */
export type TimestampFormat = 'month' | 'date' | 'datetime' | 'position';

export interface ParsedTimestamp {
  ms: number;
  format: TimestampFormat;
  /** true when the input carried fractional seconds */
  millis: boolean;
}

export type IntervalUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year' | 'position';

export interface Interval {
  unit: IntervalUnit;
  /** number of units between consecutive points (e.g. 15 for 15-minute data) */
  step: number;
  /** fixed intervals: the length in milliseconds (positions: the integer step) */
  fixedMs: number | null;
  /** calendar intervals: number of calendar months between points */
  months: number | null;
  /** calendar intervals: day of month (1..31, clamped to the month's length; 31 means month ends) */
  anchorDay: number | null;
  /** calendar intervals: time of day in milliseconds */
  timeOfDayMs: number | null;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;

const RE_MONTH = /^(\d{4})-(\d{2})$/;
const RE_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// RFC 3339 (§5.6) lets "T" and "Z" be written in lower case: "z" was read, a date-time with "t" was not
// a timestamp at all (a thirteenth probe: its column was not found, or UNPARSEABLE_TIMESTAMP when named).
// A zone written `UTC` (BigQuery's CSV exports: "2026-01-01 00:00:00 UTC") is Z; no other zone name is read.
const RE_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?\s*(Z|z|UTC|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * UTC milliseconds of a date-time in any year from 1 to 9999. Date.UTC alone reads years 0-99 as
 * 1900-1999, so the year is set again with setUTCFullYear, which takes it literally.
 */
export function utcMs(year: number, month0: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const d = new Date(Date.UTC(2000, 0, 1, hour, minute, second, ms));
  d.setUTCFullYear(year, month0, day);
  return d.getTime();
}

export function daysInMonth(year: number, month1: number): number {
  return new Date(utcMs(year, month1, 0)).getUTCDate();
}

const RE_POSITION = /^[+-]?\d{1,15}$/;

/** An integer time position (a safe integer given as a number or as a string of digits); null otherwise. */
export function parsePosition(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : null;
  if (typeof value === 'string' && RE_POSITION.test(value.trim())) return Number(value.trim());
  return null;
}

function validDate(y: number, m: number, d: number): boolean {
  return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

/**
 * Parses one timestamp value; null when it is not a timestamp we accept. Integers (numbers or digit
 * strings) are time positions: `ms` then holds the position itself.
 */
export function parseTimestamp(value: unknown): ParsedTimestamp | null {
  const position = parsePosition(value);
  if (position !== null) return { ms: position, format: 'position', millis: false };
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isFinite(ms) ? { ms, format: 'datetime', millis: ms % 1000 !== 0 } : null;
  }
  if (typeof value !== 'string') return null;
  const s = value.trim();
  let m = RE_DATE.exec(s);
  if (m) {
    const y = +m[1], mo = +m[2], d = +m[3];
    if (!validDate(y, mo, d)) return null;
    return { ms: utcMs(y, mo - 1, d), format: 'date', millis: false };
  }
  m = RE_MONTH.exec(s);
  if (m) {
    const y = +m[1], mo = +m[2];
    if (mo < 1 || mo > 12) return null;
    return { ms: utcMs(y, mo - 1, 1), format: 'month', millis: false };
  }
  m = RE_DATETIME.exec(s);
  if (m) {
    const y = +m[1], mo = +m[2], d = +m[3], hh = +m[4], mi = +m[5];
    const ss = m[6] ? +m[6] : 0;
    const frac = m[7] ? Math.round(parseFloat(m[7]) * 1000) : 0;
    if (!validDate(y, mo, d) || hh > 23 || mi > 59 || ss > 59) return null;
    let ms = utcMs(y, mo - 1, d, hh, mi, ss, frac);
    const tz = m[8];
    if (tz && tz !== 'Z' && tz !== 'z' && tz !== 'UTC') {
      const sign = tz[0] === '-' ? -1 : 1;
      const digits = tz.slice(1).replace(':', '');
      const oh = +digits.slice(0, 2);
      const om = digits.length > 2 ? +digits.slice(2, 4) : 0;
      if (oh > 23 || om > 59) return null;
      ms -= sign * (oh * HOUR + om * MINUTE);
    }
    return { ms, format: 'datetime', millis: frac !== 0 };
  }
  return null;
}

function monthIndex(ms: number): number {
  const d = new Date(ms);
  return d.getUTCFullYear() * 12 + d.getUTCMonth();
}

function timeOfDay(ms: number): number {
  return ((ms % DAY) + DAY) % DAY;
}

/** Timestamp of calendar month index `mi` (year*12+month0) with the anchor day (clamped) and time of day. */
function calendarMs(mi: number, anchorDay: number, tod: number): number {
  const year = Math.floor(mi / 12);
  const month0 = mi - year * 12;
  const day = Math.min(anchorDay, daysInMonth(year, month0 + 1));
  return utcMs(year, month0, day) + tod;
}

export type IntervalResult = { ok: true; interval: Interval } | { ok: false; reason: string };

/**
 * Infers the interval of sorted, distinct timestamps. Calendar months (months, quarters, years,
 * month ends) are tried first, then fixed lengths (minutes, hours, days, weeks). With `positions`,
 * the values are integer positions and the interval is their one regular step.
 */
export function inferInterval(sortedMs: number[], positions = false): IntervalResult {
  const n = sortedMs.length;
  if (n < 2) return { ok: false, reason: 'at least two timestamps are needed to infer the interval' };
  if (positions) {
    const d = sortedMs[1] - sortedMs[0];
    for (let i = 2; i < n; i++) {
      if (sortedMs[i] - sortedMs[i - 1] !== d) {
        return {
          ok: false,
          reason: `irregular positions: steps of ${d} and ${sortedMs[i] - sortedMs[i - 1]} (at position ${i + 1} after sorting); the series needs one regular step with no gaps`,
        };
      }
    }
    return { ok: true, interval: { unit: 'position', step: d, fixedMs: d, months: null, anchorDay: null, timeOfDayMs: null } };
  }
  // calendar months
  const tod = timeOfDay(sortedMs[0]);
  const mi0 = monthIndex(sortedMs[0]);
  const k = monthIndex(sortedMs[1]) - mi0;
  // a series whose first points follow a calendar step of k months and that breaks it later: why it
  // is irregular, said in months (the fixed lengths' reason named the first two months of unequal length)
  let calendarBreak: string | null = null;
  if (k >= 1) {
    let anchor = 0;
    for (const t of sortedMs) anchor = Math.max(anchor, new Date(t).getUTCDate());
    let ok = true;
    for (let i = 0; i < n && ok; i++) {
      const expected = calendarMs(mi0 + i * k, anchor, tod);
      if (expected !== sortedMs[i]) {
        ok = false;
        if (i >= 2) {
          const at = (ms: number) => new Date(ms).toISOString();
          calendarBreak =
            `irregular interval: steps of ${k} month(s) until ${at(sortedMs[i - 1])}, then ${at(sortedMs[i])} where ${at(expected)} was expected ` +
            `(at position ${i + 1} after sorting); the series needs one regular step with no gaps`;
        }
      }
    }
    if (ok) {
      // anchor >= 28 with every point on its month's last day: month ends
      const allEnds = sortedMs.every((t) => {
        const d = new Date(t);
        return d.getUTCDate() === daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1);
      });
      const anchorDay = allEnds ? 31 : anchor;
      let unit: IntervalUnit = 'month';
      let step = k;
      if (k % 12 === 0) {
        unit = 'year';
        step = k / 12;
      } else if (k % 3 === 0) {
        unit = 'quarter';
        step = k / 3;
      }
      return { ok: true, interval: { unit, step, fixedMs: null, months: k, anchorDay, timeOfDayMs: tod } };
    }
  }
  // fixed lengths
  const d = sortedMs[1] - sortedMs[0];
  for (let i = 2; i < n; i++) {
    if (sortedMs[i] - sortedMs[i - 1] !== d) {
      return {
        ok: false,
        reason: calendarBreak ?? `irregular interval: steps of ${describeMs(d)} and ${describeMs(sortedMs[i] - sortedMs[i - 1])} (at position ${i + 1} after sorting); the series needs one regular step with no gaps`,
      };
    }
  }
  if (d <= 0) return { ok: false, reason: 'timestamps are not increasing' };
  let unit: IntervalUnit;
  let base: number;
  if (d % WEEK === 0) [unit, base] = ['week', WEEK];
  else if (d % DAY === 0) [unit, base] = ['day', DAY];
  else if (d % HOUR === 0) [unit, base] = ['hour', HOUR];
  else if (d % MINUTE === 0) [unit, base] = ['minute', MINUTE];
  else if (d % 1000 === 0) [unit, base] = ['second', 1000];
  else return { ok: false, reason: `unsupported interval of ${d} ms (sub-second steps are not supported)` };
  return {
    ok: true,
    interval: { unit, step: d / base, fixedMs: d, months: null, anchorDay: null, timeOfDayMs: null },
  };
}

function describeMs(d: number): string {
  if (d % DAY === 0) return `${d / DAY} day(s)`;
  if (d % HOUR === 0) return `${d / HOUR} hour(s)`;
  if (d % MINUTE === 0) return `${d / MINUTE} minute(s)`;
  return `${d / 1000} second(s)`;
}

function divides(total: number, step: number): number {
  return total % step === 0 && total / step >= 2 ? total / step : 1;
}

/** Candidate season length of an interval (a seasonality test later decides whether to use it). */
export function seasonLengthOf(interval: Interval): number {
  const s = interval.step;
  switch (interval.unit) {
    case 'year':
    case 'position':
      return 1;
    case 'quarter':
      return divides(4, s);
    case 'month':
      return divides(12, s);
    case 'week':
      return s === 1 ? 52 : divides(52, s);
    case 'day':
      return divides(7, s);
    case 'hour':
      return divides(24, s);
    case 'minute': {
      const perDay = 1440 / s;
      if (Number.isInteger(perDay) && perDay <= 288) return divides(1440, s);
      return divides(60, s);
    }
    case 'second':
      return divides(60, s);
  }
}

/** The `count` timestamps (ms) following `lastMs` on the interval's calendar. */
export function futureTimestamps(lastMs: number, interval: Interval, count: number): number[] {
  const out: number[] = [];
  if (interval.months !== null) {
    const mi = monthIndex(lastMs);
    for (let i = 1; i <= count; i++) {
      out.push(calendarMs(mi + i * interval.months, interval.anchorDay ?? 1, interval.timeOfDayMs ?? 0));
    }
  } else {
    const d = interval.fixedMs ?? DAY;
    for (let i = 1; i <= count; i++) out.push(lastMs + i * d);
  }
  return out;
}

/** The last calendar year dates are read and written in (ISO 8601's four digits). */
export const LAST_YEAR = 9999;

/**
 * Whether the `count` timestamps after `lastMs` stay within year LAST_YEAR, or for integer positions
 * within the safe integers (Number.MAX_SAFE_INTEGER, the largest position read): a forecast past
 * year 9999 would print five-digit years, which no ISO 8601 reader takes, and one past 2^53 - 1 printed
 * positions rounded to their neighbours (9007199254740992 twice, 9007199254740993 never).
 */
export function futureWithinCalendar(lastMs: number, interval: Interval, format: TimestampFormat, count: number): boolean {
  if (count < 1) return true;
  if (format === 'position') return Number.isSafeInteger(lastMs + count * (interval.fixedMs ?? 1));
  const end = futureTimestamps(lastMs, interval, count)[count - 1] as number;
  return new Date(end).getUTCFullYear() <= LAST_YEAR;
}

const pad = (v: number, w = 2) => String(v).padStart(w, '0');

/** Formats a timestamp in the input's format: YYYY-MM, YYYY-MM-DD, an ISO date-time with Z, or the integer position. */
export function formatTimestamp(ms: number, format: TimestampFormat, millis = false): string {
  if (format === 'position') return String(ms);
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const ys = y >= 0 && y <= 9999 ? pad(y, 4) : String(y);
  if (format === 'month') return `${ys}-${pad(d.getUTCMonth() + 1)}`;
  if (format === 'date') return `${ys}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const iso = d.toISOString();
  return millis ? iso : iso.replace(/\.\d{3}Z$/, 'Z');
}
