/**
 * `npm run bench:api`: latency and throughput of the running service against the engine in-process.
 *
 * Starts a Temporal dev server, a scratch database and the service (`scripts/dev.ts`, a separate
 * process, as in production), trains a model on a real dataset (../shared/data/tabular/adult.csv), then
 * drives `POST /v1/models/{id}/predict` with autocannon (1-row and 1,000-row requests) and scores the
 * same rows in-process with the engine; then `POST /v1/forecast` for 1 series of 56 points (horizon 7)
 * and 100 series of 200 points (horizon 14) against the forecast engine in-process. The overhead ratio
 * is HTTP p50 latency / in-process time. The floor, measured in the same run, is a bare Koa route doing
 * one PostgreSQL query (bench/api/floor-server.ts, a process of its own), driven like `predict 1 row`.
 *
 * Options: --duration SECONDS (per scenario, default 10), --json FILE, --only TEXT (the scenarios whose
 * name contains TEXT, e.g. `--only '1 row'`; the floor always runs), --profile DIR (the service writes
 * V8 CPU profiles there when it stops, for Chrome DevTools or speedscope).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ModelVersionSchema } from '../../db/entities';
import { loadModel, predictRows } from '../../engines/tabular';
import { forecastSeries, prepareSeries } from '../../engines/forecast';
import { syntheticDailyRows } from '../forecast/data';
import { createKey } from '../../services/api-keys';
import { gunzipText } from '../../services/compression';
import { parseCsv, type Row } from '../../services/datasets';
import { freePort } from '../../scripts/lib/ports';
import { watchCpu, type CpuWatch } from './cpu';
import { runCleanup, startBenchService } from './service';

const repoRoot = path.resolve(__dirname, '..', '..');
const dataFile = path.resolve(repoRoot, '..', 'shared', 'data', 'tabular', 'adult.csv');

interface Scenario {
  name: string;
  rowsPerRequest: number;
  connections: number;
}

interface ScenarioResult {
  scenario: string;
  rows_per_request: number;
  connections: number;
  requests: number;
  non_2xx: number;
  p50_ms: number;
  mean_ms: number;
  p99_ms: number;
  requests_per_s: number;
  rows_per_s: number;
  in_process_ms: number;
  in_process_rows_per_s: number;
  overhead_ratio_p50: number;
  /** CPU per call (bench/api/cpu.ts): the service's processes and the database's backends; null off Linux. */
  cpu_service_ms_per_call: number | null;
  cpu_database_ms_per_call: number | null;
}

/** CPU milliseconds per call of a finished watch. */
async function cpuPerCall(watch: CpuWatch | null, calls: number): Promise<{ service: number | null; database: number | null }> {
  if (!watch || calls === 0) return { service: null, database: null };
  const spent = await watch.stop();
  return { service: (1000 * spent.process) / calls, database: (1000 * spent.database) / calls };
}

const msOrBlank = (value: number | null): string => (value === null ? '' : value.toFixed(3));

function timeInProcess(run: () => void, minMs = 1500, warmup = 5): number {
  for (let i = 0; i < warmup; i += 1) run();
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) {
    run();
    n += 1;
  }
  return (performance.now() - start) / n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '10' }, json: { type: 'string' }, only: { type: 'string' }, profile: { type: 'string' } } });
  const selected = (name: string): boolean => values.only === undefined || name.includes(values.only);
  const duration = Number(values.duration);
  const cleanup: Array<() => Promise<void>> = [];
  try {
    const { url, orm, account, service, databaseUrl } = await startBenchService(cleanup, values.profile);
    // One usage key per connection: a key's budget (2,000 requests/s) is below what this machine can
    // serve of one-row predictions, and a 429 answered instead would be measured as a fast call.
    const connectionKeys = [account.apiKey];
    while (connectionKeys.length < 8) connectionKeys.push((await createKey(orm.em.fork(), account.workspace.id, { name: `bench ${connectionKeys.length}`, kind: 'api', expiresAt: null })).secret);
    let nextKey = 0;
    const keyPerConnection = (client: autocannon.Client) => client.setHeaders({ 'content-type': 'application/json', 'x-api-key': connectionKeys[nextKey++ % connectionKeys.length]! });

    const rows = parseCsv(fs.readFileSync(dataFile, 'utf8'));
    const features: Row[] = rows.map(({ target: _target, ...rest }) => rest);
    const trainStart = performance.now();
    const trained = await fetch(`${url}/v1/models`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
      body: JSON.stringify({ target: 'target', engine: 'tabular-gbdt', name: 'adult', data: rows }),
    });
    const model = (await trained.json()) as { id: string; message?: string };
    if (trained.status !== 201) throw new Error(`training failed: ${trained.status} ${JSON.stringify(model)}`);
    const trainSeconds = (performance.now() - trainStart) / 1000;

    const version = await orm.em.fork().findOneOrFail(ModelVersionSchema, { model: model.id, number: 1 }, { populate: ['artefact'] });
    const engineModel = loadModel(await gunzipText(version.artefact!));

    // The floor: the same load on a bare route doing one query.
    const floorPort = await freePort();
    const floor = spawn(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [path.join(repoRoot, 'bench', 'api', 'floor-server.ts'), databaseUrl, String(floorPort)], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    cleanup.push(async () => {
      floor.kill('SIGTERM');
    });
    await new Promise<void>((resolve) => floor.stdout!.once('data', () => resolve()));
    const floorWatch = await watchCpu(floor.pid!, orm);
    const floorRun = await autocannon({ url: `http://127.0.0.1:${floorPort}/floor`, connections: 8, duration });
    const floorCpu = await cpuPerCall(floorWatch, floorRun.requests.total);
    const floorResult = {
      p50_ms: floorRun.latency.p50,
      mean_ms: floorRun.latency.average,
      p99_ms: floorRun.latency.p99,
      requests_per_s: floorRun.requests.average,
      non_2xx: floorRun.non2xx,
      cpu_service_ms_per_call: floorCpu.service,
      cpu_database_ms_per_call: floorCpu.database,
    };

    // The goals' concurrency, and one connection: with 4 calls at once on 2 cores, calls wait for each
    // other's engine work, so only the single-connection latency shows what the path itself adds.
    const scenarios: Scenario[] = [
      { name: 'predict 1 row', rowsPerRequest: 1, connections: 8 },
      { name: 'predict 1,000 rows', rowsPerRequest: 1000, connections: 4 },
      { name: 'predict 1,000 rows, one connection', rowsPerRequest: 1000, connections: 1 },
    ];
    const results: ScenarioResult[] = [];
    const record = (scenario: Scenario, run: autocannon.Result, inProcessMs: number, unitsPerRequest: number, cpu: { service: number | null; database: number | null }) => {
      results.push({
        scenario: scenario.name,
        rows_per_request: unitsPerRequest,
        connections: scenario.connections,
        requests: run.requests.total,
        non_2xx: run.non2xx,
        p50_ms: run.latency.p50,
        mean_ms: run.latency.average,
        p99_ms: run.latency.p99,
        requests_per_s: run.requests.average,
        rows_per_s: run.requests.average * unitsPerRequest,
        in_process_ms: inProcessMs,
        in_process_rows_per_s: (1000 / inProcessMs) * unitsPerRequest,
        overhead_ratio_p50: run.latency.p50 / inProcessMs,
        cpu_service_ms_per_call: cpu.service,
        cpu_database_ms_per_call: cpu.database,
      });
    };
    for (const scenario of scenarios.filter((s) => selected(s.name))) {
      const batch = features.slice(0, scenario.rowsPerRequest);
      const watch = await watchCpu(service.pid!, orm);
      const run = await autocannon({
        url: `${url}/v1/models/${model.id}/predict`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
        setupClient: keyPerConnection,
        body: JSON.stringify({ rows: batch }),
        connections: scenario.connections,
        duration,
      });
      const cpu = await cpuPerCall(watch, run.requests.total);
      record(scenario, run, timeInProcess(() => predictRows(engineModel, batch)), scenario.rowsPerRequest, cpu);
    }

    // Forecasts: synthetic daily series with a weekly pattern (the rows are what the route receives).
    const forecastScenarios = [
      { scenario: { name: 'forecast 1 series × 56 points, h=7', rowsPerRequest: 1, connections: 4 }, series: 1, points: 56, horizon: 7 },
      { scenario: { name: 'forecast 1 series × 56 points, h=7, one connection', rowsPerRequest: 1, connections: 1 }, series: 1, points: 56, horizon: 7 },
      { scenario: { name: 'forecast 100 series × 200 points, h=14', rowsPerRequest: 100, connections: 2 }, series: 100, points: 200, horizon: 14 },
      { scenario: { name: 'forecast 100 series × 200 points, h=14, one connection', rowsPerRequest: 100, connections: 1 }, series: 100, points: 200, horizon: 14 },
    ];
    const forecastInProcess = new Map<string, number>();
    for (const f of forecastScenarios.filter((s) => selected(s.scenario.name))) {
      const data = syntheticDailyRows(f.series, f.points);
      const body = f.series === 1 ? { target: 'value', horizon: f.horizon, quantiles: [0.1, 0.5, 0.9], data: data.map(({ item: _i, ...r }) => r) } : { target: 'value', horizon: f.horizon, item_id: 'item', quantiles: [0.1, 0.5, 0.9], data };
      // The 100-series call takes seconds: a fixed number of calls, with a timeout to match.
      const watch = await watchCpu(service.pid!, orm);
      const run = await autocannon({
        url: `${url}/v1/forecast`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
        body: JSON.stringify(body),
        connections: f.scenario.connections,
        timeout: 300,
        ...(f.series > 1 ? { amount: f.scenario.connections === 1 ? 3 : 6 } : { duration }),
      });
      const cpu = await cpuPerCall(watch, run.requests.total);
      const key = `${f.series}x${f.points}`;
      const inProcessMs =
        forecastInProcess.get(key) ??
        timeInProcess(() => {
          for (const s of prepareSeries(body.data, { target: 'value', timestamp: 'date', itemId: body.item_id })) forecastSeries(s, { horizon: f.horizon, quantiles: [0.1, 0.5, 0.9] });
        }, f.series > 1 ? 1 : 1500, f.series > 1 ? 1 : 5);
      forecastInProcess.set(key, inProcessMs);
      record(f.scenario, run, inProcessMs, f.series, cpu);
    }

    const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
    console.log(`\nbench:api on ${machine}; model trained over HTTP on adult (${rows.length} rows) in ${trainSeconds.toFixed(1)} s; ${duration} s per scenario\n`);
    console.log('| scenario | connections | requests | non-2xx | p50 ms | mean ms | p99 ms | req/s | rows (series)/s | in-process ms | in-process rows (series)/s | p50 / in-process |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    console.log(`| floor: bare Koa route, one query | 8 | ${floorRun.requests.total} | ${floorResult.non_2xx} | ${floorResult.p50_ms.toFixed(1)} | ${floorResult.mean_ms.toFixed(2)} | ${floorResult.p99_ms.toFixed(1)} | ${floorResult.requests_per_s.toFixed(0)} | | | | |`);
    for (const r of results) {
      console.log(
        `| ${r.scenario} | ${r.connections} | ${r.requests} | ${r.non_2xx} | ${r.p50_ms.toFixed(1)} | ${r.mean_ms.toFixed(2)} | ${r.p99_ms.toFixed(1)} | ${r.requests_per_s.toFixed(0)} | ${r.rows_per_s.toFixed(0)} | ${r.in_process_ms.toFixed(3)} | ${r.in_process_rows_per_s.toFixed(0)} | ${r.overhead_ratio_p50.toFixed(1)} |`,
      );
    }
    const oneRow = results.find((r) => r.scenario === 'predict 1 row');
    // autocannon's latencies have a resolution of 1 ms, below which the floor falls: both are compared by
    // their mean latency from Little's law (connections / throughput), which needs no timer resolution.
    if (oneRow) {
      const littleMs = (connections: number, perSecond: number) => (1000 * connections) / perSecond;
      const floorMs = littleMs(8, floorResult.requests_per_s);
      const oneRowMs = littleMs(oneRow.connections, oneRow.requests_per_s);
      console.log(`\npredict 1 row: ${oneRowMs.toFixed(2)} ms per call (connections / throughput) = ${(oneRowMs / floorMs).toFixed(1)}× the floor's ${floorMs.toFixed(2)} ms; ${oneRow.requests_per_s.toFixed(0)} requests/s`);
    }
    console.log('\nCPU per call (bench/api/cpu.ts: the server\'s processes and the scratch database\'s backends, from /proc; steadier than latency on a shared machine):\n');
    console.log('| scenario | server ms/call | database ms/call | both ms/call |');
    console.log('|---|---|---|---|');
    const cpuRow = (name: string, service: number | null, database: number | null) =>
      console.log(`| ${name} | ${msOrBlank(service)} | ${msOrBlank(database)} | ${msOrBlank(service === null || database === null ? null : service + database)} |`);
    cpuRow('floor: bare Koa route, one query', floorResult.cpu_service_ms_per_call, floorResult.cpu_database_ms_per_call);
    for (const r of results) cpuRow(r.scenario, r.cpu_service_ms_per_call, r.cpu_database_ms_per_call);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify({ machine, train_seconds: trainSeconds, duration_s: duration, floor: floorResult, results }, null, 2));
  } finally {
    await runCleanup(cleanup);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
