/**
 * Where the point forecast (`mean`, the default point estimate) leaves its own quantiles: every series of
 * the given files (default: the development collections M1, M3 and M4 hourly) and `--daily N` synthetic
 * daily series (bench:api's shape, 200 points, the next 14 held out) are forecast through the engine's
 * public API with the benchmark's levels τ = 0.1 … 0.9, as run.ts does (series shorter than the
 * service's minimum through autoForecast with the calendar's defaults). Per collection and period it
 * counts the forecast steps whose point lies outside [q0.1, q0.9] (below / above), the steps whose
 * quantiles are not monotone in level, and the steps whose point lies on the wrong side of any level
 * (q_τ above it for some τ < 0.5, or below it for some τ > 0.5).
 *
 * `--short-daily FILE[,FILE…]` adds short daily series cut from the DAILY and HOURLY series of those files
 * (hourly ones summed over 24-hour blocks counted back from their last hour, train and test parts
 * together): windows of 14, 28, 56, 112 and 200 days forecast 14 days ahead, at up to four origins 14
 * days apart from the end (the short daily shape of the black-box probe; no collection holds short
 * daily series).
 *
 * `--rules` scores post-processing rules applied to the served answers (point and quantiles as the
 * engine returned them; `base` = unchanged), per collection and period: MASE, sMAPE, WQL, the mean
 * per-series scaled quantile loss (pinball loss averaged over levels and steps, divided by the series'
 * in-sample seasonal naive MAE, MASE's scale) and its difference to `base` per series (± s.e., series
 * better / worse), the steps each rule changes, and its counts after the rule. Rules:
 *   base       the engine's answer
 *   levels     every level on the point's side: q_τ ← min(q_τ, point) for τ < 0.5, max(q_τ, point) for
 *              τ > 0.5 (the 0.5 quantile kept)
 *   tails      the same for the levels at or beyond 0.1 / 0.9 only
 *   shift      at a step whose point lies outside [q_lo, q_hi]: every quantile + (point − q0.5)
 *   shiftmin   at such a step: every quantile moved by the least amount that puts the point inside
 *              (q_lo or q_hi becomes the point)
 *   stretch    at such a step: the violated side stretched about q0.5 until its end level is the point
 *   centre     at every step: every quantile + (point − q0.5)
 *   halfcentre at every step: the levels on the point's side of q0.5 + (point − q0.5), the others kept
 *   clamp      the point clamped into [q_lo, q_hi] (quantiles unchanged)
 *
 *   tsx bench/forecast/where-mean-outside.ts [--data FILE[,FILE…]] [--daily N] [--every K]
 *                                            [--answers FILE] [--from FILE] [--rules base,levels,…]
 *
 * --answers keeps every answer (JSON) and --from reads them back instead of forecasting, so rules can be
 * scored again without refitting.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { forecastSeries, MIN_POINTS, prepareSeries, type Row } from '../../engines/forecast';
import { autoForecast, combineFor, defaultMembers, pointMembersFor, quantileMembersFor } from '../../engines/forecast/auto';
import { mase, naiveScale, smape, WqlAccumulator } from '../../engines/forecast/metrics';
import { option } from './argv';
import { PERIODS, readData, SEASON, syntheticDailyRows, TAUS, timestampsFor } from './data';

interface Answer {
  file: string;
  id: string;
  period: string;
  train: number[];
  test: number[];
  mean: number[];
  /** one array per level of TAUS */
  quantiles: number[][];
}

const argv = process.argv.slice(2);
const repoRoot = path.resolve(__dirname, '..', '..');
const DATA_DIR = path.resolve(repoRoot, '..', 'shared', 'data', 'forecast');
const files = option(argv, '--data', ['m1.csv', 'm3.csv', 'm4-hourly.csv'].map((f) => path.join(DATA_DIR, f)).join(',')).split(',').filter(Boolean);
const daily = Number(option(argv, '--daily', '100'));
const shortDaily = option(argv, '--short-daily', '').split(',').filter(Boolean);
const every = Math.max(1, Number(option(argv, '--every', '1')));
const answersOut = option(argv, '--answers', '');
const from = option(argv, '--from', '');
const rules = option(argv, '--rules', 'base').split(',').filter(Boolean);
/** series left out of the scores and counts (ids), e.g. a hyperinflation series that dominates a WQL */
const exclude = new Set(option(argv, '--exclude', '').split(',').filter(Boolean));

const LO = 0;
const HI = TAUS.length - 1;
const MID = TAUS.indexOf(0.5);

function forecastAll(): Answer[] {
  const out: Answer[] = [];
  for (const file of files) {
    const name = path.basename(file);
    const t0 = process.hrtime.bigint();
    readData(file).forEach((s, i) => {
      if (i % every !== 0) return;
      let mean: number[], quantiles: number[][];
      if (s.train.length < MIN_POINTS) {
        // as run.ts: the engine's combination for the calendar, below the public API
        const unit = s.period === 'YEARLY' ? 'year' : s.period === 'QUARTERLY' ? 'quarter' : null;
        const m = s.period === 'OTHER' ? 1 : SEASON[s.period];
        const fc = autoForecast(s.train, s.horizon, TAUS, { seasonLength: m, members: defaultMembers(unit, m, s.train.length), pointMembers: pointMembersFor({}, unit, m, s.train.length), quantileMembers: quantileMembersFor({}, unit, s.train.length), combine: combineFor({}, unit) });
        ({ mean, quantiles } = fc);
      } else {
        const ts = timestampsFor(s, s.train.length);
        const rows: Row[] = s.train.map((v, j) => ({ series_id: s.id, ds: ts[j], value: v }));
        const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'ds', itemId: 'series_id' });
        const fc = forecastSeries(prepared, { horizon: s.horizon, quantiles: TAUS });
        mean = fc.mean;
        quantiles = TAUS.map((t) => fc.quantiles[String(t)]);
      }
      out.push({ file: name, id: s.id, period: s.period, train: s.train, test: s.test, mean, quantiles });
    });
    console.error(`${name}: ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(1)} s`);
  }
  if (daily > 0) {
    const points = 200, h = 14;
    const rows = syntheticDailyRows(daily, points + h);
    for (let s = 0; s < daily; s++) {
      const all = rows.slice(s * (points + h), (s + 1) * (points + h));
      const train: Row[] = all.slice(0, points).map(({ date, value }) => ({ date, value }));
      const [prepared] = prepareSeries(train, { target: 'value', timestamp: 'date' });
      const fc = forecastSeries(prepared, { horizon: h, quantiles: TAUS });
      out.push({ file: 'synthetic', id: `daily${s}`, period: 'DAILY', train: all.slice(0, points).map((r) => r.value), test: all.slice(points).map((r) => r.value), mean: fc.mean, quantiles: TAUS.map((t) => fc.quantiles[String(t)]) });
    }
  }
  for (const file of shortDaily) {
    const name = `${path.basename(file, '.csv')} as short daily`;
    for (const s of readData(file)) {
      if (s.period !== 'DAILY' && s.period !== 'HOURLY') continue;
      let days = [...s.train, ...s.test];
      if (s.period === 'HOURLY') {
        const whole = Math.floor(days.length / 24);
        const from = days.length - whole * 24;
        days = Array.from({ length: whole }, (_, d) => days.slice(from + 24 * d, from + 24 * (d + 1)).reduce((a, v) => a + v, 0));
      }
      const h = 14;
      for (let j = 0; j < 4; j++) {
        const origin = days.length - h - 14 * j;
        for (const length of [14, 28, 56, 112, 200]) {
          if (origin - length < 0) continue;
          const train = days.slice(origin - length, origin);
          const test = days.slice(origin, origin + h);
          const rows: Row[] = train.map((value, i) => ({ date: new Date(Date.UTC(2000, 0, 1 + i)).toISOString().slice(0, 10), value }));
          const [prepared] = prepareSeries(rows, { target: 'value', timestamp: 'date' });
          const fc = forecastSeries(prepared, { horizon: h, quantiles: TAUS });
          out.push({ file: name, id: `${s.id}:${length}@${origin}`, period: 'DAILY', train, test, mean: fc.mean, quantiles: TAUS.map((t) => fc.quantiles[String(t)]) });
        }
      }
    }
  }
  return out;
}

/** A rule's answer: the point and the quantiles after it (new arrays). */
function applyRule(rule: string, a: Answer): { mean: number[]; quantiles: number[][] } {
  const mean = a.mean.slice();
  const q = a.quantiles.map((r) => r.slice());
  for (let k = 0; k < mean.length; k++) {
    const p = mean[k];
    const outside = p < q[LO][k] || p > q[HI][k];
    if (rule === 'base') continue;
    if (rule === 'levels' || rule === 'tails') {
      TAUS.forEach((t, j) => {
        if (rule === 'tails' && t > 0.1 && t < 0.9) return;
        if (t < 0.5) q[j][k] = Math.min(q[j][k], p);
        else if (t > 0.5) q[j][k] = Math.max(q[j][k], p);
      });
    } else if (rule === 'shift' || rule === 'centre') {
      if (rule === 'shift' && !outside) continue;
      const d = p - q[MID][k];
      for (const r of q) r[k] += d;
    } else if (rule === 'halfcentre') {
      const d = p - q[MID][k];
      TAUS.forEach((t, j) => {
        if ((d < 0 && t < 0.5) || (d > 0 && t > 0.5)) q[j][k] += d;
      });
    } else if (rule === 'shiftmin') {
      if (!outside) continue;
      const d = p < q[LO][k] ? p - q[LO][k] : p - q[HI][k];
      for (const r of q) r[k] += d;
    } else if (rule === 'stretch') {
      if (!outside) continue;
      const m = q[MID][k];
      const lower = p < q[LO][k];
      const end = lower ? q[LO][k] : q[HI][k];
      // the point beyond the 0.5 quantile's own side cannot be reached by a stretch about it: shift then
      if ((lower && p >= m) || (!lower && p <= m) || end === m) {
        const d = p - end;
        for (const r of q) r[k] += d;
        continue;
      }
      const f = (p - m) / (end - m);
      TAUS.forEach((t, j) => {
        if ((lower && t < 0.5) || (!lower && t > 0.5)) q[j][k] = m + (q[j][k] - m) * f;
      });
    } else if (rule === 'clamp') {
      mean[k] = Math.min(Math.max(p, q[LO][k]), q[HI][k]);
    } else throw new Error(`unknown rule ${rule}`);
  }
  return { mean, quantiles: q };
}

interface Counts { series: number; steps: number; below: number; above: number; nonMonotone: number; wrongSide: number; seriesOutside: number; changed: number }

function count(into: Counts, point: number[], q: number[][], base?: Answer): void {
  into.series++;
  let any = false;
  for (let k = 0; k < point.length; k++) {
    into.steps++;
    const p = point[k];
    if (p < q[LO][k]) into.below++;
    if (p > q[HI][k]) into.above++;
    if (p < q[LO][k] || p > q[HI][k]) any = true;
    let mono = true;
    for (let j = 1; j < q.length; j++) if (!(q[j][k] >= q[j - 1][k])) mono = false;
    if (!mono) into.nonMonotone++;
    if (TAUS.some((t, j) => (t < 0.5 && q[j][k] > p) || (t > 0.5 && q[j][k] < p))) into.wrongSide++;
    if (base && (base.mean[k] !== p || q.some((r, j) => r[k] !== base.quantiles[j][k]))) into.changed++;
  }
  if (any) into.seriesOutside++;
}

interface Metrics { n: number; mase: number; smape: number; wql: WqlAccumulator; scaled: number[]; scaledN: number }

function pct(a: number, b: number): string {
  return b ? `${((100 * a) / b).toFixed(2)} %` : '–';
}

const all: Answer[] = from ? (JSON.parse(fs.readFileSync(from, 'utf8')) as Answer[]) : forecastAll();
if (answersOut) fs.writeFileSync(answersOut, JSON.stringify(all));
const answers = all.filter((a) => !exclude.has(a.id));

const groupsOf = (a: Answer) => [`${a.file} ${a.period}`, `${a.file} ALL`];
const order = [...new Set(answers.map((a) => a.file))].flatMap((f) => [
  ...PERIODS.filter((p) => answers.some((a) => a.file === f && a.period === p)).map((p) => `${f} ${p}`),
  `${f} ALL`,
]);
const baseScaled = new Map<string, number>();
const baseWql = new Map<string, number>();

for (const rule of rules) {
  const counts = new Map<string, Counts>();
  const metrics = new Map<string, Metrics>();
  const diffs = new Map<string, number[]>();
  for (const a of answers) {
    const { mean, quantiles } = applyRule(rule, a);
    const scale = naiveScale(a.train, SEASON[a.period] ?? 1);
    const w = new WqlAccumulator(TAUS);
    w.add(a.test, quantiles);
    const abs = a.test.reduce((s, v) => s + Math.abs(v), 0);
    // the per-series quantile loss averaged over levels and steps: the accumulator's value × Σ|y| / steps
    const scaled = scale > 0 ? (w.value() * abs) / a.test.length / scale : NaN;
    const key = `${a.file}:${a.id}`;
    if (rule === 'base') baseScaled.set(key, scaled);
    for (const g of groupsOf(a)) {
      const c = counts.get(g) ?? { series: 0, steps: 0, below: 0, above: 0, nonMonotone: 0, wrongSide: 0, seriesOutside: 0, changed: 0 };
      count(c, mean, quantiles, a);
      counts.set(g, c);
      const m = metrics.get(g) ?? { n: 0, mase: 0, smape: 0, wql: new WqlAccumulator(TAUS), scaled: [], scaledN: 0 };
      m.n++;
      m.mase += mase(a.test, mean, scale);
      m.smape += smape(a.test, mean);
      m.wql.add(a.test, quantiles);
      if (Number.isFinite(scaled)) m.scaled.push(scaled);
      metrics.set(g, m);
      const b = baseScaled.get(key);
      if (b !== undefined && Number.isFinite(scaled) && Number.isFinite(b)) {
        const d = diffs.get(g) ?? [];
        d.push(scaled - b);
        diffs.set(g, d);
      }
    }
  }
  console.log(`\n#### rule \`${rule}\`\n`);
  console.log('| collection / period | series | steps | point < q0.1 | point > q0.9 | outside, share | series with a step outside | not monotone | point on the wrong side of some level | steps changed | MASE | sMAPE | WQL | WQL − base | scaled QL | scaled QL − base per series (± s.e.; better / worse) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const g of order) {
    const c = counts.get(g)!, m = metrics.get(g)!;
    const sq = m.scaled.reduce((s, v) => s + v, 0) / m.scaled.length;
    const wql = m.wql.value();
    if (rule === 'base') baseWql.set(g, wql);
    const dw = wql - (baseWql.get(g) ?? wql);
    let d = '';
    const list = diffs.get(g);
    if (rule !== 'base' && list && list.length > 1) {
      const md = list.reduce((s, v) => s + v, 0) / list.length;
      const se = Math.sqrt(list.reduce((s, v) => s + (v - md) ** 2, 0) / (list.length - 1) / list.length);
      d = `${md >= 0 ? '+' : '−'}${Math.abs(md).toFixed(5)} ± ${se.toFixed(5)} (${list.filter((v) => v < 0).length} / ${list.filter((v) => v > 0).length})`;
    }
    console.log(
      `| ${g} | ${c.series} | ${c.steps} | ${c.below} | ${c.above} | ${pct(c.below + c.above, c.steps)} | ${c.seriesOutside} | ${c.nonMonotone} | ${c.wrongSide} (${pct(c.wrongSide, c.steps)}) | ${c.changed} | ${(m.mase / m.n).toFixed(4)} | ${(m.smape / m.n).toFixed(3)} | ${wql.toFixed(6)} | ${dw >= 0 ? '+' : '−'}${Math.abs(dw).toExponential(1)} | ${sq.toFixed(5)} | ${d} |`,
    );
  }
}
