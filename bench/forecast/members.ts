/**
 * Experiment cache for choosing the combination: every candidate member's forecast (mean and sd) of
 * every k-th series of a file, from the full train part (scored on the test part) and from the train
 * part without its last horizon (a validation window), with each member's seconds. Combinations are
 * then scored from the cache by combos.ts without refitting.
 *
 *   tsx bench/forecast/members.ts --data FILE --every K --out .bench/members-NAME.json [--members a,b] [--only YEARLY,MONTHLY]
 *                                 [--window N] [--no-val]
 *
 * --window N fits on the last N points of the train part only; --no-val skips the validation fits.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { memberForecasts } from '../../engines/forecast/auto';
import type { Member } from '../../engines/forecast';
import { readData, SEASON } from './data';

const ALL: Member[] = ['ets', 'ets_damped', 'theta', 'arima', 'drift', 'naive', 'ets_temporal', 'arima_temporal'];

function arg(name: string, def?: string): string {
  const i = process.argv.indexOf(name);
  if (i < 0) {
    if (def === undefined) throw new Error(`${name} is required`);
    return def;
  }
  return process.argv[i + 1];
}

const data = path.resolve(arg('--data'));
const every = parseInt(arg('--every', '1'), 10);
const out = path.resolve(arg('--out'));
const members = arg('--members', ALL.join(',')).split(',') as Member[];
/** fit on the last `window` points only (0: the whole train part) */
const window = parseInt(arg('--window', '0'), 10);
const noVal = process.argv.includes('--no-val');
const only = arg('--only', '').split(',').map((p) => p.trim().toUpperCase()).filter(Boolean);
const series = readData(data)
  .filter((s) => !only.length || only.includes(s.period))
  .filter((_, i) => i % every === 0);
const rows: unknown[] = [];
const seconds: Record<string, number> = {};
for (const s of series) {
  const m = SEASON[s.period];
  const h = s.horizon;
  const y = window > 0 ? s.train.slice(-window) : s.train;
  const entry: Record<string, unknown> = { id: s.id, period: s.period, h, m, train: s.train, test: s.test, full: {}, val: {} };
  for (const mem of members) {
    const t0 = process.hrtime.bigint();
    const f = memberForecasts(y, h, { seasonLength: m, members: [mem] });
    seconds[mem] = (seconds[mem] ?? 0) + Number(process.hrtime.bigint() - t0) / 1e9;
    (entry.full as Record<string, unknown>)[mem] = { mean: f.forecasts[0].mean, sd: f.forecasts[0].sd };
    if (!noVal && y.length - h >= 10) {
      const v = memberForecasts(y.slice(0, y.length - h), h, { seasonLength: m, members: [mem] });
      (entry.val as Record<string, unknown>)[mem] = { mean: v.forecasts[0].mean, sd: v.forecasts[0].sd };
    }
  }
  rows.push(entry);
}
fs.writeFileSync(out, JSON.stringify({ data, every, seconds, series: rows }));
console.error(`wrote ${out}: ${rows.length} series; seconds (full fits only)`, seconds);
