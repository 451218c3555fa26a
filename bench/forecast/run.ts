/**
 * Forecast benchmark on M3-style long CSV files: our engine through its public API against
 * statsforecast (AutoETS, AutoTheta, AutoARIMA, SeasonalNaive and the mean of the first three).
 *
 *   npm run bench:forecast -- [--data FILE] [--only MONTHLY,QUARTERLY] [--limit N]
 *                             [--peers statsforecast|none] [--json FILE] [--peers-cache]
 *                             [--peers-file FILE]
 *
 * --peers-cache reuses the output of an identical earlier peers run (same data, options, peers.py and
 * pinned versions) kept under .bench/; --peers-file reads a given peers.py output (e.g. one produced by
 * `.bench/venv-forecast/bin/python bench/forecast/peers.py --data FILE --out OUT`).
 * Options for experiments (defaults are the engine's defaults): --method, --combine, --seasonal-mode.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { forecastSeries, prepareSeries, Row } from '../../engines/forecast';
import type { Combine, Intervals, Member, Method, SeasonalMode } from '../../engines/forecast';
import { mase, naiveScale, smape, WqlAccumulator } from '../../engines/forecast/metrics';

const repoRoot = path.resolve(__dirname, '..', '..');
const TAUS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const PERIODS = ['YEARLY', 'QUARTERLY', 'MONTHLY', 'OTHER', 'WEEKLY', 'DAILY', 'HOURLY', 'HALFHOURLY'];
/** seasonal period used for scoring (and forced for OTHER, which has no calendar) */
const SEASON: Record<string, number> = { YEARLY: 1, QUARTERLY: 4, MONTHLY: 12, OTHER: 1, WEEKLY: 52, DAILY: 7, HOURLY: 24, HALFHOURLY: 48 };
const SYSTEMS = ['ours', 'statsforecast_autoets', 'statsforecast_autotheta', 'statsforecast_autoarima', 'statsforecast_seasonalnaive', 'statsforecast_mean'] as const;
type System = (typeof SYSTEMS)[number];

interface Args {
  data: string;
  only: string[];
  limit: number;
  peers: 'statsforecast' | 'none';
  json: string | null;
  peersCache: boolean;
  peersFile: string | null;
  method?: Method;
  combine?: Combine;
  seasonalMode?: SeasonalMode;
  members?: Member[];
  intervals?: Intervals;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    data: path.resolve(repoRoot, '..', 'shared', 'data', 'forecast', 'm3.csv'),
    only: [],
    limit: 0,
    peers: 'statsforecast',
    json: null,
    peersCache: false,
    peersFile: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${k} needs a value`);
      return x;
    };
    if (k === '--data') a.data = path.resolve(v());
    else if (k === '--only') a.only = v().split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
    else if (k === '--limit') a.limit = parseInt(v(), 10);
    else if (k === '--peers') {
      const p = v();
      if (p !== 'statsforecast' && p !== 'none') throw new Error('--peers must be statsforecast or none');
      a.peers = p;
    } else if (k === '--json') a.json = path.resolve(v());
    else if (k === '--peers-cache') a.peersCache = true;
    else if (k === '--peers-file') a.peersFile = path.resolve(v());
    else if (k === '--method') a.method = v() as Method;
    else if (k === '--combine') a.combine = v() as Combine;
    else if (k === '--seasonal-mode') a.seasonalMode = v() as SeasonalMode;
    else if (k === '--intervals') a.intervals = v() as Intervals;
    else if (k === '--members') a.members = v().split(',') as Member[];
    else throw new Error(`unknown option ${k}`);
  }
  return a;
}

interface SeriesData {
  id: string;
  period: string;
  horizon: number;
  start: string;
  train: number[];
  test: number[];
}

function readData(file: string): SeriesData[] {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split(/\r?\n/);
  const header = lines[0].split(',');
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`column ${name} missing in ${file}`);
    return i;
  };
  const [iId, iPeriod, iH, iStart, iSplit, iT, iV] = ['series_id', 'period', 'horizon', 'start', 'split', 't', 'value'].map(col);
  const map = new Map<string, SeriesData & { pts: { t: number; v: number; split: string }[] }>();
  for (let li = 1; li < lines.length; li++) {
    if (!lines[li]) continue;
    const c = lines[li].split(',');
    let s = map.get(c[iId]);
    if (!s) {
      s = { id: c[iId], period: c[iPeriod], horizon: +c[iH], start: c[iStart], train: [], test: [], pts: [] };
      map.set(c[iId], s);
    }
    s.pts.push({ t: +c[iT], v: +c[iV], split: c[iSplit] });
  }
  const out: SeriesData[] = [];
  for (const s of map.values()) {
    s.pts.sort((a, b) => a.t - b.t);
    s.train = s.pts.filter((p) => p.split === 'train').map((p) => p.v);
    s.test = s.pts.filter((p) => p.split === 'test').map((p) => p.v);
    out.push({ id: s.id, period: s.period, horizon: s.horizon, start: s.start, train: s.train, test: s.test });
  }
  return out;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Timestamps as the data README says. */
function timestampsFor(s: SeriesData, count: number): string[] {
  const out: string[] = [];
  const [ys, ms] = s.start.split('-');
  const y0 = parseInt(ys, 10);
  const m0 = ms ? parseInt(ms, 10) - 1 : 0;
  const fixed = (stepMs: number, base: number) => {
    for (let i = 0; i < count; i++) out.push(new Date(base + i * stepMs).toISOString().replace(/\.000Z$/, 'Z'));
  };
  switch (s.period) {
    case 'MONTHLY':
    case 'QUARTERLY': {
      const step = s.period === 'MONTHLY' ? 1 : 3;
      for (let i = 0; i < count; i++) {
        const mi = y0 * 12 + m0 + i * step;
        out.push(`${pad(Math.floor(mi / 12), 4)}-${pad((mi % 12) + 1)}-01`);
      }
      break;
    }
    case 'YEARLY':
      for (let i = 0; i < count; i++) out.push(`${pad(y0 + i, 4)}-01-01`);
      break;
    case 'OTHER':
      for (let i = 0; i < count; i++) out.push(new Date(Date.UTC(2000, 0, 1 + i)).toISOString().slice(0, 10));
      break;
    case 'WEEKLY':
      fixed(7 * 86400000, Date.UTC(y0, 0, 1));
      break;
    case 'DAILY':
      fixed(86400000, Date.UTC(y0, 0, 1));
      break;
    case 'HOURLY':
      fixed(3600000, Date.UTC(y0, 0, 1));
      break;
    case 'HALFHOURLY':
      fixed(1800000, Date.UTC(y0, 0, 1));
      break;
    default:
      throw new Error(`unknown period ${s.period}`);
  }
  return out;
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

function runOurs(series: SeriesData[], args: Args, scorer: Scorer, overall: Scorer): void {
  const t0 = process.hrtime.bigint();
  for (const s of series) {
    const ts = timestampsFor(s, s.train.length);
    const rows: Row[] = s.train.map((v, i) => ({ series_id: s.id, ds: ts[i], value: v }));
    const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'ds', itemId: 'series_id' });
    const fc = forecastSeries(prepared, {
      horizon: s.horizon,
      quantiles: TAUS,
      seasonLength: s.period === 'OTHER' ? 1 : undefined,
      method: args.method,
      combine: args.combine,
      seasonalMode: args.seasonalMode,
      members: args.members,
      intervals: args.intervals,
    });
    const q = TAUS.map((t) => fc.quantiles[String(t)]);
    scorer.add(s, fc.mean, q);
    overall.add(s, fc.mean, q);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  scorer.seconds += secs;
  overall.seconds += secs;
}

interface PeerPeriod {
  period: string;
  horizon: number;
  series: string[];
  systems: Record<string, { seconds: number; mean: number[][]; quantiles: number[][][] }>;
}
interface PeerOutput {
  statsforecast_version: string;
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

function runPeers(args: Args): PeerOutput {
  if (args.peersFile) {
    console.error(`statsforecast: reading a previous peers.py output from ${args.peersFile}`);
    return JSON.parse(fs.readFileSync(args.peersFile, 'utf8')) as PeerOutput;
  }
  const py = ensureVenv();
  const stat = fs.statSync(args.data);
  const key = createHash('sha256')
    .update(JSON.stringify([args.data, stat.size, stat.mtimeMs, args.only, args.limit, fs.readFileSync(path.join(__dirname, 'peers.py'), 'utf8'), fs.readFileSync(path.join(__dirname, 'requirements-peers.txt'), 'utf8')]))
    .digest('hex')
    .slice(0, 16);
  const out = path.join(repoRoot, '.bench', `peers-forecast-${key}.json`);
  if (args.peersCache && fs.existsSync(out)) {
    console.error(`statsforecast: reusing the cached run ${path.relative(repoRoot, out)} (same data, options and versions)`);
  } else {
    const pyArgs = [path.join(__dirname, 'peers.py'), '--data', args.data, '--out', out];
    if (args.only.length) pyArgs.push('--only', args.only.join(','));
    if (args.limit > 0) pyArgs.push('--limit', String(args.limit));
    console.error('running statsforecast (single process)…');
    const r = spawnSync(py, pyArgs, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' } });
    if (r.status !== 0) throw new Error('peers.py failed');
  }
  return JSON.parse(fs.readFileSync(out, 'utf8')) as PeerOutput;
}

function fmt(x: number, d = 3): string {
  return Number.isFinite(x) ? x.toFixed(d) : 'n/a';
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const all = readData(args.data);
  const present = PERIODS.filter((p) => all.some((s) => s.period === p));
  const periods = present.filter((p) => !args.only.length || args.only.includes(p));
  const selected: Record<string, SeriesData[]> = {};
  for (const p of periods) {
    let list = all.filter((s) => s.period === p);
    if (args.limit > 0) list = list.slice(0, args.limit);
    selected[p] = list;
  }
  const peers = args.peers === 'statsforecast' ? runPeers(args) : null;
  const overall: Partial<Record<System, Scorer>> = {};
  const table: { period: string; series: number; results: Partial<Record<System, Scores>> }[] = [];
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
        const secs = members.reduce((a, m) => a + pp.systems[m].seconds, 0);
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

  const lines: string[] = [];
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
  console.log(lines.join('\n'));
  if (peers) {
    console.log(`\nstatsforecast ${peers.statsforecast_version}: one-off warm-up (imports and first calls) ${fmt(peers.warmup_seconds, 1)} s, excluded from the seconds above; statsforecast_mean seconds = AutoETS + AutoTheta + AutoARIMA.`);
  }
  if (args.json) {
    fs.writeFileSync(args.json, JSON.stringify({ periods: table, overall: overallScores }, null, 2));
    console.error(`wrote ${args.json}`);
  }
}

main();
