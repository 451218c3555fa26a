/**
 * CPU seconds of two builds of the engine in one process, series by series alternated (old, new, new,
 * old, …), so that the load of other jobs on a shared machine falls on both alike: the old engine from
 * another checkout (e.g. a worktree of main), the new from this one. Prints each side's CPU per round
 * and the ratio old / new of their sums (and of the per-round medians).
 *
 *   tsx bench/forecast/ab.ts --old /tmp/fc-old [--daily 100] [--data FILE[,FILE] --every K] [--rounds 3]
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import * as current from '../../engines/forecast';
import { readData, syntheticDailyRows, TAUS, timestampsFor } from './data';

const { values } = parseArgs({
  options: {
    old: { type: 'string' },
    data: { type: 'string', default: '' },
    every: { type: 'string', default: '10' },
    daily: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
  },
});
if (!values.old) throw new Error('--old DIR (a checkout of the engine to compare with) is required');

type Engine = typeof current;
interface Job { rows: current.Row[]; spec: current.SeriesSpec; horizon: number; quantiles: number[] }

function cpu(f: () => void): number {
  const start = process.cpuUsage();
  f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

function run(engine: Engine, job: Job): void {
  const [prepared] = engine.prepareSeries(job.rows, job.spec);
  engine.forecastSeries(prepared, { horizon: job.horizon, quantiles: job.quantiles });
}

async function main(): Promise<void> {
  const old = (await import(path.resolve(values.old!, 'engines/forecast/index.ts'))) as Engine;
  const jobs: Job[] = [];
  const daily = Number(values.daily);
  const dailyRows = syntheticDailyRows(daily, 200);
  for (let s = 0; s < daily; s++) {
    const rows = dailyRows.slice(s * 200, (s + 1) * 200).map(({ date, value }) => ({ date, value }));
    jobs.push({ rows, spec: { target: 'value', timestamp: 'date' }, horizon: 14, quantiles: [0.1, 0.5, 0.9] });
  }
  for (const file of values.data.split(',').filter(Boolean)) {
    for (const [i, s] of readData(file).entries()) {
      if (i % Number(values.every) !== 0 || s.train.length < current.MIN_POINTS) continue;
      const ts = timestampsFor(s, s.train.length);
      const rows = s.train.map((v, j) => ({ series_id: s.id, ds: ts[j], value: v }));
      jobs.push({ rows, spec: { target: 'value', timestamp: 'ds', itemId: 'series_id' }, horizon: s.horizon, quantiles: TAUS });
    }
  }
  const rounds = Number(values.rounds);
  const sums = { old: 0, new: 0 };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let o = 0, n = 0;
    jobs.forEach((job, i) => {
      // alternate which side goes first, so that neither always runs on a warmer cache
      if ((i + r) % 2 === 0) {
        o += cpu(() => run(old, job));
        n += cpu(() => run(current, job));
      } else {
        n += cpu(() => run(current, job));
        o += cpu(() => run(old, job));
      }
    });
    sums.old += o;
    sums.new += n;
    ratios.push(o / n);
    console.log(`round ${r + 1}: ${jobs.length} series  old ${o.toFixed(2)} s  new ${n.toFixed(2)} s  old/new ${(o / n).toFixed(3)}`);
  }
  ratios.sort((a, b) => a - b);
  console.log(`all rounds: old ${sums.old.toFixed(2)} s  new ${sums.new.toFixed(2)} s  old/new ${(sums.old / sums.new).toFixed(3)} (median round ${ratios[Math.floor(ratios.length / 2)].toFixed(3)})`);
}

void main();
