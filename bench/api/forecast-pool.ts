/**
 * Wall time of the 100 × 200 daily forecast spread over the engine pool's threads (the service's
 * `EnginePool.forecastPrepared`, without HTTP), next to each series' CPU in this process: whether the
 * pool reaches the engine's single-thread time divided by the threads, and how unequal the parts are.
 *
 * `--warm N` first runs `EnginePool.warmUp(N)` as the service does at start (0: cold threads).
 *
 *   tsx bench/api/forecast-pool.ts [--threads N] [--rounds R] [--warm N]
 */
import { parseArgs } from 'node:util';
import { forecastSeries, prepareSeries } from '../../engines/forecast';
import { EnginePool } from '../../services/engine-pool';
import { syntheticDailyRows } from '../forecast/data';

const { values } = parseArgs({ options: { threads: { type: 'string', default: '2' }, rounds: { type: 'string', default: '6' }, warm: { type: 'string', default: '0' } } });
const options = { horizon: 14, quantiles: [0.1, 0.5, 0.9] };
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

async function main(): Promise<void> {
  const rows = syntheticDailyRows(100, 200);
  const series = prepareSeries(rows, { target: 'value', timestamp: 'date', itemId: 'item' });
  for (const s of series) forecastSeries(s, options); // warm this thread's code
  const perSeries = series.map((s) => {
    const start = process.cpuUsage();
    forecastSeries(s, options);
    return cpuMs(start);
  });
  const total = perSeries.reduce((a, b) => a + b, 0);
  const half = perSeries.slice(0, 50).reduce((a, b) => a + b, 0);
  const sorted = [...perSeries].sort((a, b) => a - b);
  console.log(`one thread: ${total.toFixed(0)} ms CPU for the 100 series (first 50: ${half.toFixed(0)}, last 50: ${(total - half).toFixed(0)}); per series min ${sorted[0]!.toFixed(1)}, median ${sorted[50]!.toFixed(1)}, max ${sorted[99]!.toFixed(1)} ms`);

  const threads = Number(values.threads);
  const pool = new EnginePool(threads, threads);
  try {
    const prepared = await pool.prepareForecast({ rows, target: 'value', itemId: 'item' });
    if (Number(values.warm) > 0) {
      const start = performance.now();
      const warmed = await pool.warmUp(Number(values.warm));
      console.log(`warm-up of ${values.warm} series per thread: ${(performance.now() - start).toFixed(0)} ms wall, on ${new Set(warmed).size} distinct threads`);
    }
    for (let round = 1; round <= Number(values.rounds); round++) {
      const start = performance.now();
      await pool.forecastPrepared(prepared, options);
      console.log(`pool of ${threads}, call ${round}: ${(performance.now() - start).toFixed(0)} ms wall (ideal ${(total / threads).toFixed(0)} ms)`);
    }
  } finally {
    await pool.close();
  }
}

void main();
