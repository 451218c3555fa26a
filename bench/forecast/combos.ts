/**
 * Scores combinations of cached member forecasts (members.ts) per period, beside statsforecast's
 * models on the same series when a peers.py output is given. Combination specs:
 *   "ets_damped+theta+drift"       mean of the members (a member named twice counts twice)
 *   "select:A|B|C"                 per series, the combination (each A, B, … a "+"-list) with the
 *                                  lowest MAE on the validation window (the train part's last horizon)
 *   "invw:a+b+c"                   members weighted by their inverse validation MAE
 *   "med:a+b+c"                    the median of the members (point and quantile by quantile)
 *   "X~Y"                          the point forecast of spec X with the quantiles of spec Y
 *   "X^Y"                          the point forecast of spec X, the quantiles of spec Y shifted so
 *                                  that Y's 0.5 quantile is X's point forecast
 *   "X@F"                          spec X with its quantiles' distances from its 0.5 quantile times F
 *
 *   tsx bench/forecast/combos.ts --cache .bench/exp/m1.json[,more.json] [--peers .bench/peers-raw/m1.json] SPEC…
 */
import * as fs from 'node:fs';
import { combineForecasts } from '../../engines/forecast/auto';
import type { ModelForecast } from '../../engines/forecast/models/types';
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

function forecastOf(s: Cached, spec: string): { mean: number[]; quantiles: number[][] } {
  const at = spec.lastIndexOf('@');
  if (at >= 0) {
    // spread scaling: quantiles moved away from the 0.5 quantile by the factor
    const f = parseFloat(spec.slice(at + 1));
    const x = forecastOf(s, spec.slice(0, at));
    const mid = x.quantiles[TAUS.indexOf(0.5)].slice();
    return finish(s.train, { mean: x.mean, quantiles: x.quantiles.map((q) => q.map((v, k) => mid[k] + f * (v - mid[k]))) });
  }
  for (const op of ['~', '^']) {
    const i = spec.indexOf(op);
    if (i < 0) continue;
    const x = forecastOf(s, spec.slice(0, i));
    const y = forecastOf(s, spec.slice(i + 1));
    const mid = TAUS.indexOf(0.5);
    const quantiles = op === '~' ? y.quantiles : y.quantiles.map((q) => q.map((v, k) => v + x.mean[k] - y.quantiles[mid][k]));
    return finish(s.train, { mean: x.mean, quantiles });
  }
  if (spec.startsWith('select:')) {
    const options = spec.slice(7).split('|');
    let best = options[0];
    if (Object.keys(s.val).length) {
      let bestErr = Infinity;
      for (const o of options) {
        const ms = o.split('+');
        const mean = s.val[ms[0]].mean.map((_, k) => ms.reduce((a, m) => a + s.val[m].mean[k], 0) / ms.length);
        const e = valMae(s, { mean, sd: [] });
        if (e < bestErr - 1e-12) [bestErr, best] = [e, o];
      }
    }
    return forecastOf(s, best);
  }
  if (spec.startsWith('invw:')) {
    const ms = spec.slice(5).split('+');
    const w = ms.map((m) => (Object.keys(s.val).length ? 1 / Math.max(1e-9, valMae(s, s.val[m])) : 1));
    return finish(s.train, combineForecasts(weighted(ms.map((m) => s.full[m]), w), TAUS, 'mean'));
  }
  if (spec.startsWith('med:')) {
    return finish(s.train, combineForecasts(spec.slice(4).split('+').map((m) => s.full[m]), TAUS, 'median'));
  }
  const ms = spec.split('+');
  return finish(s.train, combineForecasts(ms.map((m) => s.full[m]), TAUS, 'mean'));
}

interface PeerPeriod { period: string; series: string[]; systems: Record<string, { mean: number[][]; quantiles: number[][][] }> }
const peers = peersFile ? (JSON.parse(fs.readFileSync(peersFile, 'utf8')) as { periods: PeerPeriod[] }) : null;
const PEERS = ['autoets', 'autotheta', 'autoarima', 'mean'];

const periods = [...new Set(cache.series.map((s) => s.period))];
for (const p of periods) {
  const list = cache.series.filter((s) => s.period === p);
  const rows: [string, number, number, number][] = [];
  const score = (name: string, get: (s: Cached) => { mean: number[]; quantiles: number[][] }) => {
    let ma = 0, sm = 0;
    const w = new WqlAccumulator(TAUS);
    for (const s of list) {
      const fc = get(s);
      ma += mase(s.test, fc.mean, naiveScale(s.train, s.m));
      sm += smape(s.test, fc.mean);
      w.add(s.test, fc.quantiles);
    }
    rows.push([name, ma / list.length, sm / list.length, w.value()]);
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
  for (const spec of specs) score(spec, (s) => forecastOf(s, spec));
  console.log(`\n${p} (${list.length} series)`);
  for (const [n, a, b, c] of rows) console.log(`${a.toFixed(3)}  ${b.toFixed(2)}  ${c.toFixed(4)}  ${n}`);
}
