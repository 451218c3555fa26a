/** Reading M3-style long CSV files and building the timestamps their README prescribes (bench only). */
import * as fs from 'node:fs';

export const TAUS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
export const PERIODS = ['YEARLY', 'QUARTERLY', 'MONTHLY', 'OTHER', 'WEEKLY', 'DAILY', 'HOURLY', 'HALFHOURLY'];
/** seasonal period used for scoring (and forced for OTHER, which has no calendar) */
export const SEASON: Record<string, number> = { YEARLY: 1, QUARTERLY: 4, MONTHLY: 12, OTHER: 1, WEEKLY: 52, DAILY: 7, HOURLY: 24, HALFHOURLY: 48 };

export interface SeriesData {
  id: string;
  period: string;
  horizon: number;
  start: string;
  train: number[];
  test: number[];
}

export function readData(file: string): SeriesData[] {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split(/\r?\n/);
  const header = lines[0].split(',');
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`column ${name} missing in ${file}`);
    return i;
  };
  const [iId, iPeriod, iH, iStart, iSplit, iT, iV] = ['series_id', 'period', 'horizon', 'start', 'split', 't', 'value'].map(col);
  const map = new Map<string, SeriesData & { pts: { t: number; v: number; split: string }[] }>();
  for (let li = 1; li < lines.length; li++) {
    if (!lines[li]) continue;
    const c = lines[li].split(',');
    let s = map.get(c[iId]);
    if (!s) {
      s = { id: c[iId], period: c[iPeriod], horizon: +c[iH], start: c[iStart], train: [], test: [], pts: [] };
      map.set(c[iId], s);
    }
    s.pts.push({ t: +c[iT], v: +c[iV], split: c[iSplit] });
  }
  const out: SeriesData[] = [];
  for (const s of map.values()) {
    s.pts.sort((a, b) => a.t - b.t);
    s.train = s.pts.filter((p) => p.split === 'train').map((p) => p.v);
    s.test = s.pts.filter((p) => p.split === 'test').map((p) => p.v);
    out.push({ id: s.id, period: s.period, horizon: s.horizon, start: s.start, train: s.train, test: s.test });
  }
  return out;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** UTC milliseconds of a date in any year from 1 (Date.UTC alone maps years 0-99 to 1900-1999). */
function utc(year: number, month0: number, day: number): number {
  const d = new Date(Date.UTC(2000, month0, day));
  d.setUTCFullYear(year, month0, day);
  return d.getTime();
}

/** Timestamps as the data README says, except that the calendar-less OTHER series get integer positions. */
export function timestampsFor(s: SeriesData, count: number): string[] {
  const out: string[] = [];
  const [ys, ms] = s.start.split('-');
  const y0 = parseInt(ys, 10);
  const m0 = ms ? parseInt(ms, 10) - 1 : 0;
  const fixed = (stepMs: number, base: number) => {
    for (let i = 0; i < count; i++) out.push(new Date(base + i * stepMs).toISOString().replace(/\.000Z$/, 'Z'));
  };
  switch (s.period) {
    case 'MONTHLY':
    case 'QUARTERLY': {
      const step = s.period === 'MONTHLY' ? 1 : 3;
      for (let i = 0; i < count; i++) {
        const mi = y0 * 12 + m0 + i * step;
        out.push(`${pad(Math.floor(mi / 12), 4)}-${pad((mi % 12) + 1)}-01`);
      }
      break;
    }
    case 'YEARLY':
      for (let i = 0; i < count; i++) out.push(`${pad(y0 + i, 4)}-01-01`);
      break;
    case 'OTHER':
      // no calendar: integer positions 1, 2, 3, … (the engine then proposes no season)
      for (let i = 0; i < count; i++) out.push(String(i + 1));
      break;
    case 'WEEKLY':
      fixed(7 * 86400000, utc(y0, 0, 1));
      break;
    case 'DAILY':
      fixed(86400000, utc(y0, 0, 1));
      break;
    case 'HOURLY':
      fixed(3600000, utc(y0, 0, 1));
      break;
    case 'HALFHOURLY':
      fixed(1800000, utc(y0, 0, 1));
      break;
    default:
      throw new Error(`unknown period ${s.period}`);
  }
  return out;
}

/** The synthetic daily series that bench:api sends to the forecast route (and fingerprint.ts forecasts in-process). */
export { syntheticDailyRows } from '../../services/synthetic-series';
