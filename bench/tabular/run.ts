/**
 * Tabular benchmark: our engine vs LightGBM, scikit-learn HistGradientBoosting and CatBoost (default
 * parameters), on the same folds (K-fold CV, fixed seed, stratified for classification).
 *
 *   npm run bench:tabular -- [--data DIR] [--only a,b] [--folds 5] [--peers lightgbm,sklearn,catboost|none]
 *                            [--json FILE] [--seed 0] [--no-throughput] [--engine-version V] [--no-cache]
 *                            [--config JSON] [--skip-ours] [--cpu-time]
 * (--config overrides our engine's configuration; for experiments only, not for reported results)
 * `--cpu-time`: our fit and predict seconds are this process's CPU seconds (user + system) instead of
 * wall-clock ones, so that two variants run on a shared machine under different loads compare (the
 * engine is single-threaded; the peers' times are wall-clock, as always).
 *
 * The peers run in a Python virtual environment `.bench/venv-tabular` (git-ignored) that this
 * script creates and fills with pinned versions on first use. The peers are deterministic for a seed,
 * so their per-dataset results (all folds' predictions and times) are cached in `.bench/peer-cache/`,
 * keyed by peer, pinned version, dataset content, labels, fold ids and seed: CatBoost takes tens of
 * minutes on the whole suite and runs once. `--no-cache` runs them again (and refreshes the cache).
 */
import { createHash } from 'crypto';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { predictRows, trainTabular, TABULAR_ENGINE, type EngineConfigOverride, type EngineVersion } from '../../engines/tabular/index';
import { accuracy, logLoss, rmse, rocAuc } from '../../engines/tabular/metrics';
import type { BenchRow } from './csv';
import { loadDataset, manifestEntries, type BenchTask } from './datasets';
import { measureThroughput } from './throughput';

const PINNED = ['lightgbm==4.6.0', 'scikit-learn==1.7.2', 'pandas==2.3.3', 'numpy==2.3.5', 'catboost==1.2.10'];
const repoRoot = path.resolve(__dirname, '..', '..');
const venv = path.join(repoRoot, '.bench', 'venv-tabular');
const venvPython = path.join(venv, 'bin', 'python');

type Task = BenchTask;
type System = 'ours' | 'lightgbm' | 'sklearn_hgb' | 'catboost';
const PEER_SYSTEMS: System[] = ['lightgbm', 'sklearn_hgb', 'catboost'];
const SYSTEMS: System[] = ['ours', ...PEER_SYSTEMS];
const PEER_SYSTEM: Record<string, System> = { lightgbm: 'lightgbm', sklearn: 'sklearn_hgb', catboost: 'catboost' };
const cacheDir = path.join(repoRoot, '.bench', 'peer-cache');
type FoldPred = { pred: number[]; fit_s: number; predict_s: number };
type MetricName = 'roc_auc' | 'log_loss' | 'rmse';

export interface SystemResult {
  metric: MetricName;
  score: number;
  higher_is_better: boolean;
  fit_s_per_1k: number;
  predict_s_per_1k: number;
  accuracy?: number;
  fit_s: number;
  predict_s: number;
}

export interface DatasetResult {
  name: string;
  task: Task;
  rows: number;
  results: Partial<Record<System, SystemResult>>;
}

function parseArgs(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) out[a.slice(2)] = argv[++i];
    else out[a.slice(2)] = 'true';
  }
  return out;
}

function ensureVenv(): void {
  const check = (): boolean => {
    if (!fs.existsSync(venvPython)) return false;
    const r = spawnSync(venvPython, ['-c', 'import lightgbm, sklearn, pandas, numpy, catboost; print(lightgbm.__version__, sklearn.__version__, pandas.__version__, numpy.__version__, catboost.__version__)'], { encoding: 'utf8' });
    const want = PINNED.map((p) => p.split('==')[1]).join(' ');
    return r.status === 0 && r.stdout.trim() === want;
  };
  if (check()) return;
  console.error(`[bench] preparing ${path.relative(repoRoot, venv)} with ${PINNED.join(' ')} ...`);
  fs.mkdirSync(path.dirname(venv), { recursive: true });
  if (!fs.existsSync(venvPython)) {
    const r = spawnSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('could not create the Python virtual environment (python3 -m venv)');
  }
  const r = spawnSync(venvPython, ['-m', 'pip', 'install', '--quiet', ...PINNED], { stdio: 'inherit' });
  if (r.status !== 0 || !check()) throw new Error(`pip install ${PINNED.join(' ')} failed`);
}

function metricFor(task: Task): MetricName {
  return task === 'binary' ? 'roc_auc' : task === 'multiclass' ? 'log_loss' : 'rmse';
}

function score(task: Task, y: number[], pred: number[], K: number): { score: number; accuracy?: number } {
  if (task === 'binary') return { score: rocAuc(y, pred.filter((_, j) => j % 2 === 1)) };
  if (task === 'multiclass') return { score: logLoss(y, pred, K), accuracy: accuracy(y, pred, K) };
  return { score: rmse(y, pred) };
}

function mean(a: number[]): number {
  return a.reduce((s, v) => s + v, 0) / Math.max(1, a.length);
}

function fmt(x: number | undefined, d = 4): string {
  return x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d);
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const dataDir = path.resolve(args.data ?? path.resolve(repoRoot, '..', 'shared', 'data', 'tabular'));
  const nFolds = Number(args.folds ?? 5);
  const seed = Number(args.seed ?? 0);
  const peersArg = args.peers ?? 'lightgbm,sklearn';
  const peers = peersArg === 'none' ? [] : peersArg.split(',').map((s) => s.trim()).filter(Boolean);
  // experiments only: engine configuration override as JSON, e.g. --config '{"learningRate":0.1}'
  const config = args.config ? (JSON.parse(args.config) as EngineConfigOverride) : undefined;
  // our engine's version to train (default the current one); 1.0.0 reproduces the earlier figures
  const engineVersion = args['engine-version'] as EngineVersion | undefined;
  if (engineVersion !== undefined && !(TABULAR_ENGINE.servableVersions as readonly string[]).includes(engineVersion)) throw new Error(`unknown engine version ${engineVersion}`);
  // peers only (to store their scores once while iterating on our engine)
  const skipOurs = args['skip-ours'] === 'true';
  const useCache = args['no-cache'] !== 'true';
  // nanoseconds: wall-clock, or this process's CPU time with --cpu-time
  const clock = args['cpu-time'] === 'true'
    ? (): bigint => {
        const u = process.cpuUsage();
        return BigInt(u.user + u.system) * 1000n;
      }
    : (): bigint => process.hrtime.bigint();
  for (const p of peers) if (!PEER_SYSTEM[p]) throw new Error(`unknown peer ${p} (lightgbm, sklearn, catboost)`);
  const only = args.only ? new Set(args.only.split(',').map((s) => s.trim())) : null;
  const entries = manifestEntries(dataDir, only);
  if (entries.length === 0) throw new Error('no dataset selected');
  if (peers.length > 0) ensureVenv();

  const results: DatasetResult[] = [];
  for (const entry of entries) {
    const { task, rows, y, classKeys, folds } = loadDataset(dataDir, entry, nFolds, seed);
    const target = 'target';
    const K = classKeys.length;
    const dres: DatasetResult = { name: entry.name, task, rows: rows.length, results: {} };
    const collect = (system: System, foldPreds: FoldPred[]): void => {
      const scores: number[] = [];
      const accs: number[] = [];
      let fit = 0;
      let pred = 0;
      let trainRows = 0;
      let testRows = 0;
      foldPreds.forEach((fp, f) => {
        const yt = y.filter((_, i) => folds[i] === f);
        const s = score(task, yt, fp.pred, K);
        scores.push(s.score);
        if (s.accuracy !== undefined) accs.push(s.accuracy);
        fit += fp.fit_s;
        pred += fp.predict_s;
        trainRows += rows.length - yt.length;
        testRows += yt.length;
      });
      dres.results[system] = {
        metric: metricFor(task),
        score: mean(scores),
        higher_is_better: task === 'binary',
        fit_s_per_1k: fit / (trainRows / 1000),
        predict_s_per_1k: pred / (testRows / 1000),
        ...(task === 'multiclass' ? { accuracy: mean(accs) } : {}),
        fit_s: fit,
        predict_s: pred,
      };
    };

    // ours
    const ours: Array<{ pred: number[]; fit_s: number; predict_s: number }> = [];
    for (let f = 0; f < (skipOurs ? 0 : nFolds); f++) {
      const trainRows: BenchRow[] = [];
      const testRows: BenchRow[] = [];
      rows.forEach((r, i) => (folds[i] === f ? testRows : trainRows).push(r));
      const t0 = clock();
      const trained = trainTabular(trainRows, { target, task: task === 'regression' ? 'regression' : 'classification', seed, config, engineVersion });
      const t1 = clock();
      const preds = predictRows(trained.model, testRows);
      const t2 = clock();
      const flat: number[] = [];
      for (const p of preds) {
        if (task === 'regression') flat.push(p.prediction as number);
        else for (const k of classKeys) flat.push(p.probabilities?.[k] ?? 0);
      }
      ours.push({ pred: flat, fit_s: Number(t1 - t0) / 1e9, predict_s: Number(t2 - t1) / 1e9 });
    }
    if (!skipOurs) collect('ours', ours);

    if (peers.length > 0) {
      const csvPath = path.join(dataDir, `${entry.name}.csv`);
      const key = createHash('sha1').update(fs.readFileSync(csvPath)).update(JSON.stringify({ y, folds, seed, PINNED })).digest('hex').slice(0, 16);
      const cacheFile = (peer: string): string => path.join(cacheDir, `${entry.name}.${peer}.k${nFolds}.s${seed}.${key}.json`);
      const todo: string[] = [];
      for (const peer of peers) {
        const file = cacheFile(peer);
        if (useCache && fs.existsSync(file)) collect(PEER_SYSTEM[peer], (JSON.parse(fs.readFileSync(file, 'utf8')) as { folds: FoldPred[] }).folds);
        else todo.push(peer);
      }
      // one process per peer, so that a slow or failing peer does not cost the others their results
      for (const peer of todo) {
        const jobFile = path.join(os.tmpdir(), `tabular-bench-${process.pid}-${entry.name}.json`);
        fs.writeFileSync(jobFile, JSON.stringify({ csv: csvPath, target, task, n_classes: K, y, folds, peers: [peer], seed }));
        const r = spawnSync(venvPython, [path.join(__dirname, 'peers.py'), jobFile], {
          encoding: 'utf8',
          maxBuffer: 1 << 30,
          env: { ...process.env, OMP_NUM_THREADS: '1' },
        });
        fs.rmSync(jobFile, { force: true });
        if (r.status !== 0) {
          console.error(`[bench] peers.py (${peer}) failed on ${entry.name}: ${r.stderr.split('\n').slice(-3).join(' ')}`);
          continue;
        }
        const out = JSON.parse(r.stdout) as Record<string, { folds: FoldPred[] }>;
        const v = out[PEER_SYSTEM[peer]];
        fs.mkdirSync(cacheDir, { recursive: true });
        fs.writeFileSync(cacheFile(peer), JSON.stringify(v));
        collect(PEER_SYSTEM[peer], v.folds);
      }
    }
    results.push(dres);
    const line = SYSTEMS
      .filter((s) => dres.results[s])
      .map((s) => {
        const x = dres.results[s] as SystemResult;
        return `${s}=${fmt(x.score)}${x.accuracy !== undefined ? ` (acc ${fmt(x.accuracy, 3)})` : ''} fit ${fmt(x.fit_s_per_1k, 3)}s/1k`;
      })
      .join(' | ');
    console.log(`${entry.name.padEnd(20)} ${task.padEnd(10)} ${metricFor(task).padEnd(8)} ${line}`);
  }

  const summary = summarise(results);
  console.log('\nSummary');
  console.log(JSON.stringify(summary, null, 2));
  let throughput: ReturnType<typeof measureThroughput> | null = null;
  if (args['no-throughput'] !== 'true') {
    throughput = measureThroughput();
    console.log(
      `\nBatch prediction (${throughput.trees} trees, ${throughput.rows} rows, one core, median / best of 5): ` +
        `${Math.round(throughput.rowsPerSecondMatrix)} / ${Math.round(throughput.rowsPerSecondMatrixBest)} rows/s on encoded rows, ` +
        `${Math.round(throughput.rowsPerSecondObjects)} / ${Math.round(throughput.rowsPerSecondObjectsBest)} rows/s from row objects (predictRows)`,
    );
  }
  if (args.json) {
    const clean = results.map((d) => ({
      name: d.name,
      task: d.task,
      results: Object.fromEntries(
        Object.entries(d.results).map(([k, v]) => [k, {
          metric: v.metric,
          score: v.score,
          higher_is_better: v.higher_is_better,
          fit_s_per_1k: v.fit_s_per_1k,
          predict_s_per_1k: v.predict_s_per_1k,
          ...(v.accuracy !== undefined ? { accuracy: v.accuracy } : {}),
          fit_s: v.fit_s,
          predict_s: v.predict_s,
        }]),
      ),
    }));
    fs.writeFileSync(path.resolve(args.json), JSON.stringify({ datasets: clean, summary: { ...summary, folds: nFolds, seed, throughput } }, null, 2));
  }
}

export function better(a: SystemResult, b: SystemResult): number {
  if (a.score === b.score) return 0.5;
  return (a.higher_is_better ? a.score > b.score : a.score < b.score) ? 1 : 0;
}

export function summarise(results: DatasetResult[]): Record<string, unknown> {
  const out: Record<string, unknown> = { datasets: results.length };
  for (const peer of PEER_SYSTEMS) {
    const both = results.filter((d) => d.results.ours && d.results[peer]);
    if (both.length === 0) continue;
    const wins = both.reduce((s, d) => s + better(d.results.ours as SystemResult, d.results[peer] as SystemResult), 0);
    const ratios = both.map((d) => (d.results.ours as SystemResult).fit_s / (d.results[peer] as SystemResult).fit_s).sort((a, b) => a - b);
    const totalOurs = both.reduce((s, d) => s + (d.results.ours as SystemResult).fit_s, 0);
    const totalPeer = both.reduce((s, d) => s + (d.results[peer] as SystemResult).fit_s, 0);
    const byTask: Record<string, string> = {};
    for (const t of ['binary', 'multiclass', 'regression']) {
      const sub = both.filter((d) => d.task === t);
      if (sub.length) byTask[t] = `${sub.reduce((s, d) => s + better(d.results.ours as SystemResult, d.results[peer] as SystemResult), 0)}/${sub.length}`;
    }
    const bin = both.filter((d) => d.task === 'binary');
    out[`vs_${peer}`] = {
      win_rate: wins / both.length,
      ...(bin.length ? { mean_binary_roc_auc_diff: mean(bin.map((d) => (d.results.ours as SystemResult).score - (d.results[peer] as SystemResult).score)) } : {}),
      wins: `${wins}/${both.length}`,
      wins_by_task: byTask,
      fit_time_ratio_total: totalOurs / totalPeer,
      fit_time_ratio_median: ratios[Math.floor(ratios.length / 2)],
    };
  }
  const binary = results.filter((d) => d.task === 'binary');
  if (binary.length) {
    const auc: Record<string, number> = {};
    for (const s of SYSTEMS) {
      const v = binary.filter((d) => d.results[s]).map((d) => (d.results[s] as SystemResult).score);
      if (v.length === binary.length) auc[s] = mean(v);
    }
    out.mean_binary_roc_auc = auc;
  }
  const totals: Record<string, { fit_s: number; predict_s: number }> = {};
  for (const s of SYSTEMS) {
    const v = results.filter((d) => d.results[s]);
    if (v.length) totals[s] = { fit_s: v.reduce((a, d) => a + (d.results[s] as SystemResult).fit_s, 0), predict_s: v.reduce((a, d) => a + (d.results[s] as SystemResult).predict_s, 0) };
  }
  out.total_seconds = totals;
  return out;
}

// importable (merge.ts uses summarise) without running the benchmark
if (require.main === module) main();
