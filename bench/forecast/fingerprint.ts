/**
 * A fingerprint of the engine's answers, to prove that a change meant to be a pure speed-up changes
 * no forecast: every k-th series of the given files (and synthetic daily series with a weekly
 * pattern, the shape bench:api sends) is forecast through the public API with the benchmark's
 * quantiles, and the SHA-1 of every answer's JSON is printed per period with the seconds it took.
 *
 *   tsx bench/forecast/fingerprint.ts [--data FILE[,FILE]] [--every K] [--daily N] [--out FILE]
 *
 * Run it before and after the change: equal digests mean bit-identical forecasts (`--out` keeps the
 * per-series digests, to find the first series that differs). A second digest per period covers the
 * point forecasts (`mean`) alone, for a change meant to alter the quantiles only.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { forecastSeries, MIN_POINTS, prepareSeries, type Row } from '../../engines/forecast';
import { readData, syntheticDailyRows, TAUS, timestampsFor } from './data';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '../shared/data/forecast/m3.csv' },
    every: { type: 'string', default: '1' },
    daily: { type: 'string', default: '100' },
    out: { type: 'string' },
  },
});
const every = Number(values.every);
const perSeries: Record<string, string> = {};
const groups = new Map<string, { hash: ReturnType<typeof createHash>; meanHash: ReturnType<typeof createHash>; seconds: number; n: number }>();

function record(group: string, id: string, answer: { mean: number[] }, seconds: number): void {
  const digest = createHash('sha1').update(JSON.stringify(answer)).digest('hex');
  perSeries[id] = digest;
  const g = groups.get(group) ?? { hash: createHash('sha1'), meanHash: createHash('sha1'), seconds: 0, n: 0 };
  g.hash.update(digest);
  g.meanHash.update(JSON.stringify(answer.mean));
  g.seconds += seconds;
  g.n++;
  groups.set(group, g);
}

function timed<T>(f: () => T): [T, number] {
  const t0 = process.hrtime.bigint();
  const out = f();
  return [out, Number(process.hrtime.bigint() - t0) / 1e9];
}

for (const file of values.data.split(',').filter(Boolean)) {
  const name = file.split('/').pop() ?? file;
  readData(file).forEach((s, i) => {
    if (i % every !== 0 || s.train.length < MIN_POINTS) return;
    const ts = timestampsFor(s, s.train.length);
    const rows: Row[] = s.train.map((v, j) => ({ series_id: s.id, ds: ts[j], value: v }));
    const [answer, seconds] = timed(() => {
      const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'ds', itemId: 'series_id' });
      return forecastSeries(prepared, { horizon: s.horizon, quantiles: TAUS });
    });
    record(`${name} ${s.period}`, `${name}:${s.id}`, answer, seconds);
  });
}

const daily = Number(values.daily);
const dailyRows = syntheticDailyRows(daily, 200);
for (let s = 0; s < daily; s++) {
  const rows: Row[] = dailyRows.slice(s * 200, (s + 1) * 200).map(({ date, value }) => ({ date, value }));
  const [answer, seconds] = timed(() => {
    const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'date' });
    return forecastSeries(prepared, { horizon: 14, quantiles: [0.1, 0.5, 0.9] });
  });
  record('synthetic daily 200 points', `daily:${s}`, answer, seconds);
}

for (const [group, g] of groups) console.log(`${group.padEnd(32)} ${String(g.n).padStart(5)} series  ${g.seconds.toFixed(2).padStart(8)} s  ${g.hash.digest('hex')}  mean ${g.meanHash.digest('hex')}`);
if (values.out) fs.writeFileSync(values.out, JSON.stringify(perSeries));
