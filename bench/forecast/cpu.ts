/**
 * CPU seconds of the engine (this process's user + system time, which other jobs on the machine do not
 * inflate the way they inflate wall time) on the synthetic daily set and on every k-th series of the
 * given files, per period, through the public API with the benchmark's quantiles. For speed work next
 * to fingerprint.ts, which proves the answers unchanged; run it several times, old and new alternated.
 *
 *   tsx bench/forecast/cpu.ts [--data FILE[,FILE]] [--every K] [--daily N]
 */
import { parseArgs } from 'node:util';
import { forecastSeries, MIN_POINTS, prepareSeries, type Row } from '../../engines/forecast';
import { readData, syntheticDailyRows, TAUS, timestampsFor } from './data';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '' },
    every: { type: 'string', default: '10' },
    daily: { type: 'string', default: '100' },
  },
});

function cpuSeconds(f: () => void): number {
  const start = process.cpuUsage();
  f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

const every = Number(values.every);
for (const file of values.data.split(',').filter(Boolean)) {
  const name = file.split('/').pop() ?? file;
  const seconds = new Map<string, { s: number; n: number }>();
  for (const [i, s] of readData(file).entries()) {
    if (i % every !== 0 || s.train.length < MIN_POINTS) continue;
    const ts = timestampsFor(s, s.train.length);
    const rows: Row[] = s.train.map((v, j) => ({ series_id: s.id, ds: ts[j], value: v }));
    const used = cpuSeconds(() => {
      const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'ds', itemId: 'series_id' });
      forecastSeries(prepared, { horizon: s.horizon, quantiles: TAUS });
    });
    const g = seconds.get(s.period) ?? { s: 0, n: 0 };
    g.s += used;
    g.n++;
    seconds.set(s.period, g);
  }
  let total = 0;
  for (const [period, g] of seconds) {
    total += g.s;
    console.log(`${`${name} ${period}`.padEnd(32)} ${String(g.n).padStart(5)} series  ${g.s.toFixed(2).padStart(8)} s CPU`);
  }
  console.log(`${`${name} all`.padEnd(32)} ${''.padStart(5)}         ${total.toFixed(2).padStart(8)} s CPU`);
}

const daily = Number(values.daily);
if (daily > 0) {
  const dailyRows = syntheticDailyRows(daily, 200);
  const used = cpuSeconds(() => {
    for (let s = 0; s < daily; s++) {
      const rows: Row[] = dailyRows.slice(s * 200, (s + 1) * 200).map(({ date, value }) => ({ date, value }));
      const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'date' });
      forecastSeries(prepared, { horizon: 14, quantiles: [0.1, 0.5, 0.9] });
    }
  });
  console.log(`${'synthetic daily 200 points'.padEnd(32)} ${String(daily).padStart(5)} series  ${used.toFixed(2).padStart(8)} s CPU`);
}
