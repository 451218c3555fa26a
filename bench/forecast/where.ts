/**
 * Where the engine's CPU goes on the synthetic daily set (or every k-th series of files): CPU seconds per
 * default member fitted alone, and per ETS specification / ARIMA order with optimiser evaluations.
 *
 *   tsx bench/forecast/where.ts [--daily N] [--data FILE --every K]
 */
import { parseArgs } from 'node:util';
import { forecastSeries, MIN_POINTS, prepareSeries, type Row } from '../../engines/forecast';
import { defaultMembers, type Member } from '../../engines/forecast/auto';
import { readData, syntheticDailyRows, TAUS, timestampsFor } from './data';

const { values } = parseArgs({ options: { daily: { type: 'string', default: '100' }, data: { type: 'string', default: '' }, every: { type: 'string', default: '10' }, reps: { type: 'string', default: '1' } } });

function cpu(f: () => void): number {
  const s = process.cpuUsage();
  f();
  const u = process.cpuUsage(s);
  return (u.user + u.system) / 1e6;
}

interface Job { prepared: ReturnType<typeof prepareSeries>[number]; h: number; taus: number[] }
const jobs: Job[] = [];
const daily = Number(values.daily);
const rows = syntheticDailyRows(daily, 200);
for (let s = 0; s < daily; s++) {
  const r: Row[] = rows.slice(s * 200, (s + 1) * 200).map(({ date, value }) => ({ date, value }));
  jobs.push({ prepared: prepareSeries(r, { target: 'value', timestamp: 'date' })[0], h: 14, taus: [0.1, 0.5, 0.9] });
}
for (const file of values.data.split(',').filter(Boolean)) {
  for (const [i, s] of readData(file).entries()) {
    if (i % Number(values.every) !== 0 || s.train.length < MIN_POINTS) continue;
    const ts = timestampsFor(s, s.train.length);
    const r: Row[] = s.train.map((v, j) => ({ series_id: s.id, ds: ts[j], value: v }));
    jobs.push({ prepared: prepareSeries(r, { target: 'value', timestamp: 'ds', itemId: 'series_id' })[0], h: s.horizon, taus: TAUS });
  }
}
const members = new Set<Member>();
for (const j of jobs) for (const m of defaultMembers(j.prepared.interval.unit, j.prepared.seasonLength, j.prepared.values.length)) members.add(m);
for (let rep = 0; rep < Number(values.reps); rep++) {
  const all = cpu(() => { for (const j of jobs) forecastSeries(j.prepared, { horizon: j.h, quantiles: j.taus }); });
  console.log(`all members          ${all.toFixed(2)} s`);
  for (const m of members) {
    const t = cpu(() => {
      for (const j of jobs) {
        if (!defaultMembers(j.prepared.interval.unit, j.prepared.seasonLength, j.prepared.values.length).includes(m)) continue;
        forecastSeries(j.prepared, { horizon: j.h, quantiles: j.taus, members: [m] });
      }
    });
    console.log(`${m.padEnd(20)} ${t.toFixed(2)} s`);
  }
}
