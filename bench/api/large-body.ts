/**
 * `npx tsx bench/api/large-body.ts`: what a large prediction body costs the API's other calls.
 *
 * Starts the service as `bench:api` does (bench/api/service.ts), trains a model on synthetic rows of
 * `--columns` numeric columns, then sends `--calls` predictions of `--rows` rows each (10,000 × 300:
 * about 64 MB of JSON) one after the other, while one client asks `GET /v1/engines` (public, no
 * statement) again as soon as each answer arrives. The longest wait of that client while a large call
 * runs is how long the API's event loop was held: every other call of the process waited as long.
 * `--scenario train`: the calls are `POST /v1/models` of `--rows` rows whose columns but two are
 * constant (a wide table the engine's analysis mostly drops, so that the fit takes seconds);
 * `--scenario validate`: the same body to `POST /v1/datasets/validate`.
 * `--scenario forecast` and `--scenario backtest`: `POST /v1/forecast` (horizon 7) and
 * `POST /v1/forecast/backtest` of `--series` daily series of `--points` points (date, item, value).
 * `--poll-pause MS`: the client pauses so long between its polls (0: none), so that its own CPU does not
 * slow the large call on a small host.
 * `--profile DIR`: the service writes V8 CPU profiles there when it stops.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runCleanup, startBenchService } from './service';
import { syntheticDailyRows } from '../../services/synthetic-series';

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function syntheticRows(n: number, columns: number, seed: number, varying = columns): Array<Record<string, number>> {
  const rand = prng(seed);
  return Array.from({ length: n }, () => {
    const row: Record<string, number> = {};
    for (let c = 0; c < columns; c += 1) row[`feature_${c}`] = c < varying ? Math.round(rand() * 1e6) / 1e3 : 123.456;
    row.y = row.feature_0! + 2 * row.feature_1! - row.feature_2! + rand() * 50;
    return row;
  });
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rows: { type: 'string', default: '10000' }, columns: { type: 'string', default: '300' }, calls: { type: 'string', default: '3' }, profile: { type: 'string' }, scenario: { type: 'string', default: 'predict' }, series: { type: 'string', default: '200' }, 'poll-pause': { type: 'string', default: '0' }, points: { type: 'string', default: '5000' } } });
  const rowCount = Number(values.rows);
  const columns = Number(values.columns);
  const calls = Number(values.calls);
  const pauseMs = Number(values['poll-pause']);
  const cleanup: Array<() => Promise<void>> = [];
  try {
    const { url, account } = await startBenchService(cleanup, values.profile);
    const headers = { 'content-type': 'application/json', 'x-api-key': account.apiKey };
    const trained = await fetch(`${url}/v1/models`, { method: 'POST', headers, body: JSON.stringify({ target: 'y', engine: 'tabular-gbdt', name: 'wide', data: syntheticRows(1000, columns, 1) }) });
    const model = (await trained.json()) as { id: string };
    if (trained.status !== 201) throw new Error(`training failed: ${trained.status} ${JSON.stringify(model)}`);
    const { scenario } = values;
    const tabular = { target: 'y', engine: 'tabular-gbdt', name: 'wide', data: syntheticRows(rowCount, columns, 2, 2) };
    const seriesBody = () => ({ target: 'value', timestamp: 'date', item_id: 'item', horizon: 7, data: syntheticDailyRows(Number(values.series), Number(values.points)) });
    const scenarios: Record<string, () => { path: string; body: unknown; shape: string }> = {
      predict: () => ({ path: `/v1/models/${model.id}/predict`, body: { rows: syntheticRows(rowCount, columns, 2).map(({ y: _y, ...features }) => features) }, shape: `${rowCount} rows × ${columns} columns` }),
      train: () => ({ path: '/v1/models', body: tabular, shape: `${rowCount} rows × ${columns} columns` }),
      validate: () => ({ path: '/v1/datasets/validate', body: tabular, shape: `${rowCount} rows × ${columns} columns` }),
      forecast: () => ({ path: '/v1/forecast', body: seriesBody(), shape: `${values.series} series × ${values.points} points` }),
      backtest: () => ({ path: '/v1/forecast/backtest', body: seriesBody(), shape: `${values.series} series × ${values.points} points` }),
    };
    const chosen = scenarios[scenario]?.();
    if (!chosen) throw new Error(`--scenario: one of ${Object.keys(scenarios).join(', ')}`);
    const body = JSON.stringify(chosen.body);
    const target = `${url}${chosen.path}`;
    console.log(`${scenario} body: ${(Buffer.byteLength(body) / 1e6).toFixed(1)} MB, ${chosen.shape}`);

    const results: Array<{ call: number; ms: number; status: number; polls: number; p50: number; max: number }> = [];
    for (let call = 1; call <= calls; call += 1) {
      let running = true;
      const waits: number[] = [];
      const poller = (async () => {
        while (running) {
          const start = performance.now();
          await (await fetch(`${url}/v1/engines`)).arrayBuffer();
          waits.push(performance.now() - start);
          // a pause keeps the poller's own CPU (client and server) from slowing the large call on this 2-core host
          if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
        }
      })();
      const start = performance.now();
      const res = await fetch(target, { method: 'POST', headers, body });
      await res.arrayBuffer();
      const ms = performance.now() - start;
      running = false;
      await poller;
      const sorted = [...waits].sort((a, b) => a - b);
      results.push({ call, ms, status: res.status, polls: waits.length, p50: quantile(sorted, 0.5), max: sorted[sorted.length - 1] ?? NaN });
    }
    console.log('| call | status | large call ms | polls answered meanwhile | poll p50 ms | longest poll ms |');
    console.log('|---:|---:|---:|---:|---:|---:|');
    for (const r of results) console.log(`| ${r.call} | ${r.status} | ${r.ms.toFixed(0)} | ${r.polls} | ${r.p50.toFixed(1)} | ${r.max.toFixed(0)} |`);
  } finally {
    await runCleanup(cleanup);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
