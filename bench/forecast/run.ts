/**
 * Forecast benchmark on M3-style long CSV files: our engine through its public API against
 * statsforecast (AutoETS, AutoTheta, AutoARIMA, SeasonalNaive and the mean of the first three), one
 * table per file and period.
 *
 *   npm run bench:forecast -- [--data FILE[,FILE…]]… [--only MONTHLY,QUARTERLY] [--limit N]
 *                             [--every K] [--peers statsforecast|none] [--peers-fresh]
 *                             [--json FILE] [--series-out FILE] [--peers-file FILE] [--peers-chunk N] [--peers-partial]
 *
 * Without --data: m1.csv, m3.csv and m4-hourly.csv of ../shared/data/forecast (the development
 * collections). --every K keeps every K-th series of each period (after --limit), for quick experiments.
 * statsforecast's forecasts of a file are cached under .bench/ (keyed by the file's content, the
 * selection, peers.py and the pinned versions) and reused by later runs; a cache of the whole file
 * (or, for an --every run, of the same --only/--limit without --every) also serves runs on a part of
 * it. When none exists, peers.py runs on the selection itself (with --every K: the same every K-th
 * series only) and rewrites its cache after every chunk of --peers-chunk series (default 10), all
 * models on a chunk before the next, so a stopped run keeps what it computed: the next run resumes it,
 * or --peers-partial scores the series the stopped run finished (ours on the same series) without
 * running statsforecast. --peers-fresh runs statsforecast again; --peers-file reads a given peers.py
 * output (single --data only). Options for experiments (defaults are the engine's defaults): --method,
 * --combine, --seasonal-mode, --members, --intervals.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { forecastSeries, MIN_POINTS, prepareSeries, Row } from '../../engines/forecast';
import { autoForecast, combineFor, defaultMembers, pointMembersFor, quantileMembersFor } from '../../engines/forecast/auto';
import type { Combine, Intervals, Member, Method, SeasonalMode } from '../../engines/forecast';
import { mase, naiveScale, smape, WqlAccumulator } from '../../engines/forecast/metrics';
import { PERIODS, readData, SEASON, SeriesData, TAUS, timestampsFor } from './data';

const repoRoot = path.resolve(__dirname, '..', '..');
const DATA_DIR = path.resolve(repoRoot, '..', 'shared', 'data', 'forecast');
const DEFAULT_FILES = ['m1.csv', 'm3.csv', 'm4-hourly.csv'];
const SYSTEMS = ['ours', 'statsforecast_autoets', 'statsforecast_autotheta', 'statsforecast_autoarima', 'statsforecast_seasonalnaive', 'statsforecast_mean'] as const;
type System = (typeof SYSTEMS)[number];
/** the peers whose best a goal compares against (the seasonal naive forecast is a reference only) */
const GOAL_PEERS: System[] = ['statsforecast_autoets', 'statsforecast_autotheta', 'statsforecast_autoarima', 'statsforecast_mean'];

interface Args {
  data: string[];
  only: string[];
  limit: number;
  every: number;
  peers: 'statsforecast' | 'none';
  json: string | null;
  peersFresh: boolean;
  peersFile: string | null;
  peersChunk: number;
  peersPartial: boolean;
  method?: Method;
  combine?: Combine;
  seasonalMode?: SeasonalMode;
  members?: Member[];
  intervals?: Intervals;
  /** per-series scores of ours (MASE, sMAPE, the WQL's loss and scale) as JSON, for paired comparisons */
  seriesOut: string | null;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { data: [], only: [], limit: 0, every: 1, peers: 'statsforecast', json: null, peersFresh: false, peersFile: null, peersChunk: 10, peersPartial: false, seriesOut: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${k} needs a value`);
      return x;
    };
    if (k === '--data') a.data.push(...v().split(',').filter(Boolean).map((f) => path.resolve(f)));
    else if (k === '--only') a.only = v().split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
    else if (k === '--limit') a.limit = parseInt(v(), 10);
    else if (k === '--every') a.every = Math.max(1, parseInt(v(), 10));
    else if (k === '--peers') {
      const p = v();
      if (p !== 'statsforecast' && p !== 'none') throw new Error('--peers must be statsforecast or none');
      a.peers = p;
    } else if (k === '--json') a.json = path.resolve(v());
    else if (k === '--series-out') a.seriesOut = path.resolve(v());
    else if (k === '--peers-cache') continue; // the cache is always used now; kept so old commands still run
    else if (k === '--peers-fresh') a.peersFresh = true;
    else if (k === '--peers-file') a.peersFile = path.resolve(v());
    else if (k === '--peers-chunk') a.peersChunk = Math.max(1, parseInt(v(), 10));
    else if (k === '--peers-partial') a.peersPartial = true;
    else if (k === '--method') a.method = v() as Method;
    else if (k === '--combine') a.combine = v() as Combine;
    else if (k === '--seasonal-mode') a.seasonalMode = v() as SeasonalMode;
    else if (k === '--intervals') a.intervals = v() as Intervals;
    else if (k === '--members') a.members = v().split(',') as Member[];
    else throw new Error(`unknown option ${k}`);
  }
  if (a.data.length === 0) a.data = DEFAULT_FILES.map((f) => path.join(DATA_DIR, f));
  if (a.peersFile && a.data.length > 1) throw new Error('--peers-file needs a single --data file');
  return a;
}

interface Scores {
  mase: number;
  smape: number;
  wql: number;
  seconds: number;
}

class Scorer {
  maseSum = 0;
  smapeSum = 0;
  n = 0;
  wql = new WqlAccumulator(TAUS);
  seconds = 0;
  add(s: SeriesData, mean: number[], quantiles: number[][]) {
    const scale = naiveScale(s.train, SEASON[s.period]);
    this.maseSum += mase(s.test, mean, scale);
    this.smapeSum += smape(s.test, mean);
    this.wql.add(s.test, quantiles);
    this.n++;
  }
  scores(): Scores {
    return { mase: this.maseSum / this.n, smape: this.smapeSum / this.n, wql: this.wql.value(), seconds: this.seconds };
  }
}

/** ours' scores per series (--series-out): MASE, sMAPE, and the WQL's summed loss over its levels and Σ|y| */
const oursSeries: { file: string; id: string; period: string; mase: number; smape: number; loss: number; abs: number }[] = [];

function recordSeries(s: SeriesData, mean: number[], quantiles: number[][]): void {
  const w = new WqlAccumulator(TAUS);
  w.add(s.test, quantiles);
  const abs = s.test.reduce((a, v) => a + Math.abs(v), 0);
  oursSeries.push({ file: currentFile, id: s.id, period: s.period, mase: mase(s.test, mean, naiveScale(s.train, SEASON[s.period])), smape: smape(s.test, mean), loss: w.value() * abs, abs });
}
let currentFile = '';

/** series too short for the service (fewer than MIN_POINTS points), forecast below its public API */
let shortSeries = 0;

function runOurs(series: SeriesData[], args: Args, scorer: Scorer, overall: Scorer): void {
  const t0 = process.hrtime.bigint();
  for (const s of series) {
    if (s.train.length < MIN_POINTS) {
      // prepareSeries refuses them (the service's minimum); the engine's own combination for the
      // period's calendar still forecasts them, as the peers do
      shortSeries++;
      const unit = s.period === 'YEARLY' ? 'year' : s.period === 'QUARTERLY' ? 'quarter' : null;
      const m = s.period === 'OTHER' ? 1 : SEASON[s.period];
      const fc = autoForecast(s.train, s.horizon, TAUS, { seasonLength: m, members: args.members ?? defaultMembers(unit, m, s.train.length), pointMembers: pointMembersFor(args, unit, m, s.train.length), quantileMembers: quantileMembersFor(args, unit, s.train.length), method: args.method, combine: combineFor(args, unit), seasonalMode: args.seasonalMode });
      scorer.add(s, fc.mean, fc.quantiles);
      overall.add(s, fc.mean, fc.quantiles);
      recordSeries(s, fc.mean, fc.quantiles);
      continue;
    }
    const ts = timestampsFor(s, s.train.length);
    const rows: Row[] = s.train.map((v, i) => ({ series_id: s.id, ds: ts[i], value: v }));
    const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'ds', itemId: 'series_id' });
    const fc = forecastSeries(prepared, {
      horizon: s.horizon,
      quantiles: TAUS,
      method: args.method,
      combine: args.combine,
      seasonalMode: args.seasonalMode,
      members: args.members,
      intervals: args.intervals,
    });
    const q = TAUS.map((t) => fc.quantiles[String(t)]);
    scorer.add(s, fc.mean, q);
    overall.add(s, fc.mean, q);
    recordSeries(s, fc.mean, q);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  scorer.seconds += secs;
  overall.seconds += secs;
}

interface PeerPeriod {
  period: string;
  horizon: number;
  series: string[];
  /** how many of `series` (from the first) every model has forecast; absent in outputs written before chunked runs (all) */
  done?: number;
  systems: Record<string, { seconds: number; mean: number[][]; quantiles: number[][][] }>;
}
interface PeerOutput {
  statsforecast_version: string;
  /** false while a chunked run is under way or was stopped; absent in outputs written before chunked runs (complete) */
  complete?: boolean;
  warmup_seconds: number;
  periods: PeerPeriod[];
}

function ensureVenv(): string {
  const venv = path.join(repoRoot, '.bench', 'venv-forecast');
  const py = path.join(venv, 'bin', 'python');
  const req = path.join(__dirname, 'requirements-peers.txt');
  const stamp = path.join(venv, '.requirements.sha');
  const reqHash = createHash('sha256').update(fs.readFileSync(req)).digest('hex');
  if (!fs.existsSync(py)) {
    fs.mkdirSync(path.dirname(venv), { recursive: true });
    console.error(`creating ${venv}`);
    const r = spawnSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('could not create the virtual environment');
  }
  if (!fs.existsSync(stamp) || fs.readFileSync(stamp, 'utf8') !== reqHash) {
    console.error('installing pinned statsforecast into .bench/venv-forecast');
    const r = spawnSync(py, ['-m', 'pip', 'install', '-q', '-r', req], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('pip install failed');
    fs.writeFileSync(stamp, reqHash);
  }
  return py;
}

function peerCachePath(data: string, only: string[], limit: number, every = 1): string {
  const key = createHash('sha256')
    .update(fs.readFileSync(data))
    .update(JSON.stringify(every > 1 ? [only, limit, every] : [only, limit]))
    .update(fs.readFileSync(path.join(__dirname, 'peers.py')))
    .update(fs.readFileSync(path.join(__dirname, 'requirements-peers.txt')))
    .digest('hex')
    .slice(0, 16);
  return path.join(repoRoot, '.bench', `peers-${path.basename(data, '.csv')}-${key}.json`);
}

function readPeers(file: string): PeerOutput {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as PeerOutput;
}

/**
 * statsforecast's forecasts of `data`: a given output, a complete cache (whole file first, then the
 * same selection without --every, then the selection itself), a stopped run's cache (--peers-partial),
 * or a run that fills (or resumes) the selection's cache.
 */
function runPeers(args: Args, data: string): PeerOutput {
  if (args.peersFile) {
    console.error(`statsforecast: reading a previous peers.py output from ${args.peersFile}`);
    return readPeers(args.peersFile);
  }
  const whole = peerCachePath(data, [], 0);
  const selection = peerCachePath(data, args.only, args.limit);
  const out = peerCachePath(data, args.only, args.limit, args.every);
  const candidates = [...new Set([whole, selection, out])];
  if (!args.peersFresh) {
    for (const f of candidates) {
      if (!fs.existsSync(f)) continue;
      const cached = readPeers(f);
      if (cached.complete === false) continue;
      console.error(`statsforecast: reusing the cached run ${path.relative(repoRoot, f)} (same data, peers.py and versions)`);
      return cached;
    }
    if (args.peersPartial) {
      const f = candidates.find((c) => fs.existsSync(c));
      if (!f) throw new Error('--peers-partial: no cached statsforecast run of this selection');
      const cached = readPeers(f);
      console.error(`statsforecast: scoring the series the stopped run ${path.relative(repoRoot, f)} finished (${cached.periods.map((p) => `${p.period} ${p.done ?? p.series.length}/${p.series.length}`).join(', ')})`);
      return cached;
    }
  }
  const py = ensureVenv();
  const pyArgs = [path.join(__dirname, 'peers.py'), '--data', data, '--out', out, '--chunk', String(args.peersChunk)];
  if (args.only.length) pyArgs.push('--only', args.only.join(','));
  if (args.limit > 0) pyArgs.push('--limit', String(args.limit));
  if (args.every > 1) pyArgs.push('--every', String(args.every));
  const resume = !args.peersFresh && fs.existsSync(out);
  if (resume) pyArgs.push('--resume');
  console.error(`${resume ? 'resuming' : 'running'} statsforecast on ${path.basename(data)}${args.every > 1 ? ` (every ${args.every}-th series of each period)` : ''} (single process)…`);
  const r = spawnSync(py, pyArgs, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' } });
  if (r.status !== 0) throw new Error('peers.py failed');
  return readPeers(out);
}

function fmt(x: number, d = 3): string {
  return Number.isFinite(x) ? x.toFixed(d) : 'n/a';
}

interface FileResult {
  file: string;
  periods: { period: string; series: number; results: Partial<Record<System, Scores>> }[];
  overall: Partial<Record<System, Scores>>;
}

function runFile(args: Args, data: string): FileResult {
  currentFile = path.basename(data);
  const all = readData(data);
  const present = PERIODS.filter((p) => all.some((s) => s.period === p));
  const periods = present.filter((p) => !args.only.length || args.only.includes(p));
  const selected: Record<string, SeriesData[]> = {};
  for (const p of periods) {
    let list = all.filter((s) => s.period === p);
    if (args.limit > 0) list = list.slice(0, args.limit);
    if (args.every > 1) list = list.filter((_, i) => i % args.every === 0);
    selected[p] = list;
  }
  const peers = args.peers === 'statsforecast' ? runPeers(args, data) : null;
  const partial: string[] = [];
  if (peers) {
    // a stopped run (--peers-partial): score every system on the series all its models finished
    for (const p of periods) {
      const pp = peers.periods.find((x) => x.period === p);
      if (!pp || pp.done === undefined || pp.done >= pp.series.length) continue;
      const finished = new Set(pp.series.slice(0, pp.done));
      const before = selected[p].length;
      selected[p] = selected[p].filter((s) => finished.has(s.id));
      partial.push(`${p}: ${selected[p].length} of ${before} series`);
    }
  }
  const overall: Partial<Record<System, Scorer>> = {};
  const table: FileResult['periods'] = [];
  for (const p of periods) {
    const series = selected[p];
    const scorers: Partial<Record<System, Scorer>> = {};
    const get = (sys: System, into: Partial<Record<System, Scorer>>) => (into[sys] ??= new Scorer());
    runOurs(series, args, get('ours', scorers), get('ours', overall));
    if (peers) {
      const pp = peers.periods.find((x) => x.period === p);
      if (!pp) throw new Error(`peer output lacks ${p}`);
      const index = new Map(pp.series.map((id, i) => [id, i]));
      for (const sys of SYSTEMS) {
        if (sys === 'ours') continue;
        const members = sys === 'statsforecast_mean' ? ['statsforecast_autoets', 'statsforecast_autotheta', 'statsforecast_autoarima'] : [sys];
        const sc = get(sys, scorers), ov = get(sys, overall);
        for (const s of series) {
          const i = index.get(s.id);
          if (i === undefined) throw new Error(`peer output lacks ${s.id}`);
          const mean = s.test.map((_, k) => members.reduce((a, m) => a + pp.systems[m].mean[i][k], 0) / members.length);
          const q = TAUS.map((_, j) => s.test.map((_, k) => members.reduce((a, m) => a + pp.systems[m].quantiles[j][i][k], 0) / members.length));
          sc.add(s, mean, q);
          ov.add(s, mean, q);
        }
        // seconds of the peers' whole-period run (or of its finished series), scaled to the share of its series scored here
        const share = series.length / (pp.done ?? pp.series.length);
        const secs = members.reduce((a, m) => a + pp.systems[m].seconds, 0) * share;
        sc.seconds += secs;
        ov.seconds += secs;
      }
    }
    const results: Partial<Record<System, Scores>> = {};
    for (const sys of SYSTEMS) if (scorers[sys]) results[sys] = scorers[sys]!.scores();
    table.push({ period: p, series: series.length, results });
  }
  const overallScores: Partial<Record<System, Scores>> = {};
  for (const sys of SYSTEMS) if (overall[sys]) overallScores[sys] = overall[sys]!.scores();

  const lines: string[] = [`\n#### ${path.basename(data)}\n`];
  lines.push(`| period | series | system | MASE | sMAPE | WQL | seconds |`);
  lines.push(`|---|---:|---|---:|---:|---:|---:|`);
  const emit = (period: string, n: number, res: Partial<Record<System, Scores>>) => {
    for (const sys of SYSTEMS) {
      const r = res[sys];
      if (r) lines.push(`| ${period} | ${n} | ${sys} | ${fmt(r.mase)} | ${fmt(r.smape, 2)} | ${fmt(r.wql)} | ${fmt(r.seconds, 1)} |`);
    }
  };
  for (const row of table) emit(row.period, row.series, row.results);
  emit('ALL', table.reduce((a, r) => a + r.series, 0), overallScores);
  if (shortSeries > 0) {
    lines.push(`\n${shortSeries} series with fewer than ${MIN_POINTS} training points (refused by prepareSeries, as by the service) were forecast by the engine's combination directly (autoForecast with the calendar's default members).`);
    shortSeries = 0;
  }
  if (peers) {
    lines.push('');
    for (const row of [...table, { period: 'ALL', series: table.reduce((a, r) => a + r.series, 0), results: overallScores }]) {
      const ours = row.results.ours!;
      const best = GOAL_PEERS.map((sys) => ({ sys, r: row.results[sys]! })).sort((a, b) => a.r.mase - b.r.mase)[0];
      const meanWql = row.results.statsforecast_mean!.wql;
      lines.push(
        `- ${row.period} (${row.series} series): MASE ${fmt(ours.mase)} against the best peer's ${fmt(best.r.mase)} (${best.sys.replace('statsforecast_', '')}): ${ours.mase < best.r.mase ? 'below' : 'NOT below'}; ` +
          `WQL ${fmt(ours.wql)} against the peers' mean's ${fmt(meanWql)}: ${ours.wql <= meanWql ? 'no worse' : 'WORSE'}`,
      );
    }
    if (partial.length) lines.push(`\nPARTIAL statsforecast run (unfinished or stopped): every system scored on the series all peers finished only (${partial.join('; ')}).`);
    lines.push(`\nstatsforecast ${peers.statsforecast_version}: one-off warm-up (imports and first calls) ${fmt(peers.warmup_seconds, 1)} s, excluded from the seconds above; statsforecast_mean seconds = AutoETS + AutoTheta + AutoARIMA.`);
  }
  console.log(lines.join('\n'));
  return { file: path.basename(data), periods: table, overall: overallScores };
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const results = args.data.map((d) => runFile(args, d));
  if (args.seriesOut) fs.writeFileSync(args.seriesOut, JSON.stringify(oursSeries));
  if (args.json) {
    fs.writeFileSync(args.json, JSON.stringify(results, null, 2));
    console.error(`wrote ${args.json}`);
  }
}

main();
