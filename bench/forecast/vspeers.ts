/**
 * Series by series against statsforecast, from a run's outputs: our per-series scores (run.ts
 * `--series-out`) and statsforecast's forecasts (the `.bench/peers-*.json` cache of the same file).
 * Per period, and per period and source (the series id's prefix up to the first `_`; with --group, the
 * prefixes given and `other`), our MASE beside each peer's and their mean's, the mean per-series difference of
 * MASE against the peers' mean and against the period's best peer (ours − peer, ± its standard
 * error), and on how many series ours is lower / higher.
 *
 *   tsx bench/forecast/vspeers.ts --data FILE --ours OURS.json --peers PEERS.json [--group a,b] [--exclude id,id] [--worst N]
 *
 * WQL (ours and the peers' mean's) is summed over the group's series as run.ts does, so a series of
 * large values weighs most; --exclude leaves the given series out of every figure.
 * --group lists the id prefixes that form sources (e.g. tourism_,fpp3_us_employment), the rest is `other`; --worst N
 * prints, per period, the N series where our MASE exceeds the peers' mean's by most.
 */
import * as fs from 'node:fs';
import { option } from './argv';
import { mase, naiveScale, WqlAccumulator } from '../../engines/forecast/metrics';
import { readData, SEASON, TAUS } from './data';

const argv = process.argv.slice(2);
const opt = (k: string, d?: string): string => option(argv, k, d);
const data = readData(opt('--data'));
const ours = new Map((JSON.parse(fs.readFileSync(opt('--ours'), 'utf8')) as { id: string; mase: number; loss: number; abs: number }[]).map((r) => [r.id, r]));
const peers = JSON.parse(fs.readFileSync(opt('--peers'), 'utf8')) as {
  periods: { period: string; series: string[]; done?: number; systems: Record<string, { mean: number[][]; quantiles: number[][][] }> }[];
};
const groups = opt('--group', '').split(',').filter(Boolean);
const exclude = new Set(opt('--exclude', '').split(',').filter(Boolean));
const worst = parseInt(opt('--worst', '0'), 10);
const PEERS = ['statsforecast_autoets', 'statsforecast_autotheta', 'statsforecast_autoarima'];
const NAMES = ['AutoETS', 'AutoTheta', 'AutoARIMA', 'mean'];

/** MASE of ours and of each peer and their mean; the WQL's loss (summed over levels and steps) of each, and Σ|y| */
interface Row { id: string; period: string; source: string; ours: number; peer: number[]; loss: number[]; abs: number }
const rows: Row[] = [];
for (const pp of peers.periods) {
  const done = pp.done ?? pp.series.length;
  const index = new Map(pp.series.slice(0, done).map((id, i) => [id, i]));
  for (const s of data.filter((x) => x.period === pp.period)) {
    const i = index.get(s.id);
    const o = ours.get(s.id);
    if (i === undefined || o === undefined || exclude.has(s.id)) continue;
    const scale = naiveScale(s.train, SEASON[s.period]);
    const f = PEERS.map((p) => pp.systems[p].mean[i]);
    const meanF = s.test.map((_, k) => (f[0][k] + f[1][k] + f[2][k]) / 3);
    const source = groups.length ? groups.find((g) => s.id.startsWith(g)) ?? 'other' : s.id.split('_')[0];
    const abs = s.test.reduce((a, v) => a + Math.abs(v), 0);
    const q = PEERS.map((p) => TAUS.map((_, j) => pp.systems[p].quantiles[j][i]));
    const qMean = TAUS.map((_, j) => s.test.map((_, k) => (q[0][j][k] + q[1][j][k] + q[2][j][k]) / 3));
    const loss = [...q, qMean].map((qq) => {
      const w = new WqlAccumulator(TAUS);
      w.add(s.test, qq);
      return w.value() * abs;
    });
    rows.push({ id: s.id, period: s.period, source, ours: o.mase, peer: [...f.map((x) => mase(s.test, x, scale)), mase(s.test, meanF, scale)], loss: [o.loss, ...loss], abs });
  }
}

const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
function paired(list: Row[], j: number, label = ''): string {
  const d = list.map((r) => r.ours - r.peer[j]);
  const m = avg(d);
  const se = d.length > 1 ? Math.sqrt(d.reduce((a, b) => a + (b - m) ** 2, 0) / (d.length - 1) / d.length) : NaN;
  const lower = d.filter((x) => x < 0).length, higher = d.filter((x) => x > 0).length;
  return `${m >= 0 ? '+' : '−'}${Math.abs(m).toFixed(3)} ± ${Number.isFinite(se) ? se.toFixed(3) : 'n/a'}${label} | ${lower} / ${higher}`;
}

const wql = (list: Row[], j: number) => (list.reduce((a, r) => a + r.loss[j], 0) / list.reduce((a, r) => a + r.abs, 0)).toFixed(3);
console.log('| period | source | series | MASE ours | AutoETS | AutoTheta | AutoARIMA | mean | ours − mean (± s.e.) | lower / higher | ours − best peer (± s.e.) | lower / higher | WQL ours | WQL mean |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const periods = [...new Set(rows.map((r) => r.period))];
for (const p of periods) {
  const inP = rows.filter((r) => r.period === p);
  const sources = [...new Set(inP.map((r) => r.source))];
  const sets: [string, Row[]][] = [['all', inP], ...(sources.length > 1 ? sources.map((s) => [s, inP.filter((r) => r.source === s)] as [string, Row[]]) : [])];
  for (const [name, list] of sets) {
    const m = [0, 1, 2, 3].map((j) => avg(list.map((r) => r.peer[j])));
    const best = m.indexOf(Math.min(...m));
    console.log(
      `| ${p} | ${name} | ${list.length} | ${avg(list.map((r) => r.ours)).toFixed(3)} | ${m.map((x) => x.toFixed(3)).join(' | ')} | ${paired(list, 3)} | ${paired(list, best, ` (${NAMES[best]})`)} | ${wql(list, 0)} | ${wql(list, 4)} |`,
    );
  }
}
if (worst > 0) {
  for (const p of periods) {
    const list = rows.filter((r) => r.period === p).sort((a, b) => b.ours - b.peer[3] - (a.ours - a.peer[3]));
    console.log(`\n${p}: largest excess of our MASE over the peers' mean's`);
    for (const r of list.slice(0, worst)) console.log(`  ${r.id}: ours ${r.ours.toFixed(3)}, ${NAMES.map((n, j) => `${n} ${r.peer[j].toFixed(3)}`).join(', ')}`);
  }
}
