/**
 * Scores combinations of cached member forecasts (members.ts) per period, beside statsforecast's
 * models on the same series when a peers.py output is given. Combination specs:
 *   "ets_damped+theta+drift"       mean of the members (a member named twice counts twice)
 *   "select:A|B|C"                 per series, the combination (each A, B, … a "+"-list) with the
 *                                  lowest MAE on the validation window (the train part's last horizon)
 *   "invw:a+b+c"                   members weighted by their inverse validation MAE
 *   "med:a+b+c"                    the median of the members (point and quantile by quantile)
 *   "trim:a+b+c+d"                 the mean without the lowest and the highest member (point and
 *                                  quantile by quantile, step by step)
 *   "X~Y"                          the point forecast of spec X with the quantiles of spec Y
 *   "X^Y"                          the point forecast of spec X, the quantiles of spec Y shifted so
 *                                  that Y's 0.5 quantile is X's point forecast
 *   "X@F"                          spec X with its quantiles' distances from its 0.5 quantile times F
 *
 *   "len:N:X|Y"                    spec X for series whose train part has at least N points, spec Y for
 *                                  the others (X and Y may hold "~", "^" and "@", not "|")
 *   "drift:T:X|Y"                  spec X for series whose seasonal pattern drifts by at least T (the mean
 *                                  |difference| of the multiplicative seasonal indices of the history's
 *                                  first and last halves), spec Y for the others
 *   "seas:X|Y"                     spec X for series whose seasonality test passes (the engine's test,
 *                                  at the scoring season), spec Y for the others
 * "select:" options may be any of these specs (their validation forecasts are combined the same way).
 * Every spec after the first is also compared with the first series by series: the mean difference of
 * MASE with its standard error, the series it wins / loses, and the mean difference on odd and even
 * series separately (a change that holds on both halves is less likely noise).
 *
 *   tsx bench/forecast/combos.ts --cache .bench/exp/m1.json[,more.json] [--peers .bench/peers-raw/m1.json] SPEC…
 */
import * as fs from 'node:fs';
import { combineForecasts } from '../../engines/forecast/auto';
import { ModelForecast, normalQuantiles } from '../../engines/forecast/models/types';
import { seasonalIndices, seasonalityTest } from '../../engines/forecast/math';
import { mase, naiveScale, smape, WqlAccumulator } from '../../engines/forecast/metrics';
import { TAUS } from './data';

interface Cached {
  id: string;
  period: string;
  h: number;
  m: number;
  train: number[];
  test: number[];
  full: Record<string, ModelForecast>;
  val: Record<string, ModelForecast>;
}

const argv = process.argv.slice(2);
const take = (k: string): string | null => {
  const i = argv.indexOf(k);
  if (i < 0) return null;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const cacheFile = take('--cache');
if (!cacheFile) throw new Error('--cache is required');
const peersFile = take('--peers');
// series left out (comma-separated ids), e.g. a hyperinflation series that dominates a mean
const exclude = new Set((take('--exclude') ?? '').split(',').filter(Boolean));
// several caches of the same series (comma-separated) are merged member by member
const cache = { series: [] as Cached[] };
for (const f of cacheFile.split(',')) {
  const part = JSON.parse(fs.readFileSync(f, 'utf8')) as { series: Cached[] };
  if (!cache.series.length) cache.series = part.series;
  else {
    const byId = new Map(part.series.map((s) => [s.id, s]));
    for (const s of cache.series) {
      const o = byId.get(s.id);
      if (!o) throw new Error(`${f} lacks ${s.id}`);
      Object.assign(s.full, o.full);
      Object.assign(s.val, o.val);
    }
  }
}
const specs = argv;

function finish(y: number[], fc: { mean: number[]; quantiles: number[][] }) {
  if (y.every((v) => v >= 0)) {
    fc.mean = fc.mean.map((v) => Math.max(0, v));
    fc.quantiles = fc.quantiles.map((q) => q.map((v) => Math.max(0, v)));
  }
  for (let k = 0; k < fc.mean.length; k++) {
    const col = fc.quantiles.map((q) => q[k]).sort((a, b) => a - b);
    col.forEach((v, i) => (fc.quantiles[i][k] = v));
  }
  return fc;
}

function weighted(fs_: ModelForecast[], w: number[]): ModelForecast[] {
  // a weighted mean of normal quantiles equals the mean over members repeated in proportion to w
  const sum = w.reduce((a, b) => a + b, 0);
  const h = fs_[0].mean.length;
  const mean = Array.from({ length: h }, (_, k) => fs_.reduce((a, f, i) => a + (w[i] / sum) * f.mean[k], 0));
  const sd = Array.from({ length: h }, (_, k) => fs_.reduce((a, f, i) => a + (w[i] / sum) * f.sd[k], 0));
  return [{ mean, sd }];
}

const valMae = (s: Cached, f: ModelForecast) => {
  const o = s.train.length - s.h;
  let e = 0;
  for (let k = 0; k < s.h; k++) e += Math.abs(s.train[o + k] - f.mean[k]);
  return e / s.h;
};

function trimmed(xs: number[]): number {
  const v = xs.slice().sort((a, b) => a - b);
  const inner = v.length > 2 ? v.slice(1, -1) : v;
  return inner.reduce((a, b) => a + b, 0) / inner.length;
}

/** the mean of the members without the lowest and highest, for the point and every quantile level */
function trimCombine(fs_: ModelForecast[]): { mean: number[]; quantiles: number[][] } {
  const h = fs_[0].mean.length;
  const mq = fs_.map((f) => normalQuantiles(f, TAUS));
  return {
    mean: Array.from({ length: h }, (_, k) => trimmed(fs_.map((f) => f.mean[k]))),
    quantiles: TAUS.map((_, i) => Array.from({ length: h }, (_, k) => trimmed(mq.map((q) => q[i][k])))),
  };
}

type Src = 'full' | 'val';

/**
 * How much a seasonal pattern drifts: the mean absolute difference between the multiplicative seasonal
 * indices of the first and the last half of the history (whole seasons, phases aligned); −1 when the
 * halves hold fewer than three seasons, the seasonality test fails or a value is ≤ 0.
 */
function seasonalDrift(y: number[], m: number): number {
  const k = Math.floor(y.length / 2 / m) * m;
  if (m < 2 || k < 3 * m || !seasonalityTest(y, m) || !y.every((v) => v > 0)) return -1;
  const a = seasonalIndices(y.slice(0, k), m, true);
  const b = seasonalIndices(y.slice(y.length - k), m, true);
  const o = y.length - k;
  let d = 0;
  for (let p = 0; p < m; p++) d += Math.abs(a[p] - b[(((p - o) % m) + m) % m]);
  return d / m;
}

function forecastOf(s: Cached, spec: string, src: Src = 'full'): { mean: number[]; quantiles: number[][] } {
  const mem = s[src];
  if (spec.startsWith('len:')) {
    // "len:N:X|Y": spec X for series whose train part has at least N points, Y for the others
    const rest = spec.slice(4);
    const colon = rest.indexOf(':');
    const [x, y] = rest.slice(colon + 1).split('|');
    return forecastOf(s, s.train.length >= parseInt(rest.slice(0, colon), 10) ? x : y, src);
  }
  if (spec.startsWith('drift:')) {
    // "drift:T:X|Y": spec X for series whose seasonal pattern drifts by at least T, Y for the others
    const rest = spec.slice(6);
    const colon = rest.indexOf(':');
    const [x, y] = rest.slice(colon + 1).split('|');
    return forecastOf(s, seasonalDrift(s.train, s.m) >= parseFloat(rest.slice(0, colon)) ? x : y, src);
  }
  const at = spec.lastIndexOf('@');
  if (at >= 0) {
    // spread scaling: quantiles moved away from the 0.5 quantile by the factor
    const f = parseFloat(spec.slice(at + 1));
    const x = forecastOf(s, spec.slice(0, at), src);
    const mid = x.quantiles[TAUS.indexOf(0.5)].slice();
    return finish(s.train, { mean: x.mean, quantiles: x.quantiles.map((q) => q.map((v, k) => mid[k] + f * (v - mid[k]))) });
  }
  for (const op of ['~', '^']) {
    const i = spec.indexOf(op);
    if (i < 0) continue;
    const x = forecastOf(s, spec.slice(0, i), src);
    const y = forecastOf(s, spec.slice(i + 1), src);
    const mid = TAUS.indexOf(0.5);
    const quantiles = op === '~' ? y.quantiles : y.quantiles.map((q) => q.map((v, k) => v + x.mean[k] - y.quantiles[mid][k]));
    return finish(s.train, { mean: x.mean, quantiles });
  }
  if (spec.startsWith('seas:')) {
    const [x, y] = spec.slice(5).split('|');
    return forecastOf(s, s.m > 1 && seasonalityTest(s.train, s.m) ? x : y, src);
  }
  if (spec.startsWith('select:')) {
    const options = spec.slice(7).split('|');
    let best = options[0];
    if (src === 'full' && Object.keys(s.val).length) {
      let bestErr = Infinity;
      for (const o of options) {
        const e = valMae(s, { mean: forecastOf(s, o, 'val').mean, sd: [] });
        if (e < bestErr - 1e-12) [bestErr, best] = [e, o];
      }
    }
    return forecastOf(s, best, src);
  }
  if (spec.startsWith('invw:')) {
    const ms = spec.slice(5).split('+');
    const w = ms.map((m) => (src === 'full' && Object.keys(s.val).length ? 1 / Math.max(1e-9, valMae(s, s.val[m])) : 1));
    return finish(s.train, combineForecasts(weighted(ms.map((m) => mem[m]), w), TAUS, 'mean'));
  }
  if (spec.startsWith('med:')) {
    return finish(s.train, combineForecasts(spec.slice(4).split('+').map((m) => mem[m]), TAUS, 'median'));
  }
  if (spec.startsWith('trim:')) {
    return finish(s.train, trimCombine(spec.slice(5).split('+').map((m) => mem[m])));
  }
  const ms = spec.split('+');
  return finish(s.train, combineForecasts(ms.map((m) => mem[m]), TAUS, 'mean'));
}

interface PeerPeriod { period: string; series: string[]; systems: Record<string, { mean: number[][]; quantiles: number[][][] }> }
const peers = peersFile ? (JSON.parse(fs.readFileSync(peersFile, 'utf8')) as { periods: PeerPeriod[] }) : null;
const PEERS = ['autoets', 'autotheta', 'autoarima', 'mean'];

const periods = [...new Set(cache.series.map((s) => s.period))];
for (const p of periods) {
  const list = cache.series.filter((s) => s.period === p && !exclude.has(s.id));
  const rows: [string, number, number, number, string][] = [];
  let first: number[] | null = null;
  const score = (name: string, get: (s: Cached) => { mean: number[]; quantiles: number[][] }, compare = false) => {
    let ma = 0, sm = 0;
    const w = new WqlAccumulator(TAUS);
    const per: number[] = [];
    for (const s of list) {
      const fc = get(s);
      const e = mase(s.test, fc.mean, naiveScale(s.train, s.m));
      per.push(e);
      ma += e;
      sm += smape(s.test, fc.mean);
      w.add(s.test, fc.quantiles);
    }
    let note = '';
    if (compare && first) {
      const base = first;
      const d = per.map((v, i) => v - base[i]);
      const n = d.length;
      const md = d.reduce((a, b) => a + b, 0) / n;
      const se = Math.sqrt(d.reduce((a, b) => a + (b - md) ** 2, 0) / (n - 1) / n);
      const half = (r: number) => {
        const x = d.filter((_, i) => i % 2 === r);
        return x.reduce((a, b) => a + b, 0) / Math.max(1, x.length);
      };
      note = `  [vs first: ${md >= 0 ? '+' : ''}${md.toFixed(4)} ± ${se.toFixed(4)}; better ${d.filter((v) => v < -1e-12).length}, worse ${d.filter((v) => v > 1e-12).length}; halves ${half(0).toFixed(4)} / ${half(1).toFixed(4)}]`;
    } else if (compare) first = per;
    rows.push([name, ma / list.length, sm / list.length, w.value(), note]);
  };
  if (peers) {
    const pp = peers.periods.find((x) => x.period === p);
    if (pp) {
      const idx = new Map(pp.series.map((id, i) => [id, i]));
      for (const peer of PEERS) {
        const mem = peer === 'mean' ? ['autoets', 'autotheta', 'autoarima'] : [peer];
        score(`sf_${peer}`, (s) => {
          const i = idx.get(s.id)!;
          const mean = s.test.map((_, k) => mem.reduce((a, m) => a + pp.systems[`statsforecast_${m}`].mean[i][k], 0) / mem.length);
          const quantiles = TAUS.map((_, j) => s.test.map((_, k) => mem.reduce((a, m) => a + pp.systems[`statsforecast_${m}`].quantiles[j][i][k], 0) / mem.length));
          return { mean, quantiles };
        });
      }
    }
  }
  for (const spec of specs) score(spec, (s) => forecastOf(s, spec), true);
  console.log(`\n${p} (${list.length} series)`);
  for (const [n, a, b, c, note] of rows) console.log(`${a.toFixed(4)}  ${b.toFixed(2)}  ${c.toFixed(5)}  ${n}${note}`);
}
