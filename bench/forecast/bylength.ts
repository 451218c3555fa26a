/**
 * Two point combinations of cached member forecasts (members.ts), compared per length of the training
 * part: per bin, the mean per-series MASE difference (B − A) with its standard error.
 *
 *   tsx bench/forecast/bylength.ts --cache .bench/exp/m3-quarterly.json --a ets+ets_damped+theta --b ets_seasonal+theta
 *                                  [--combine-a mean|median] [--combine-b mean|median] [--bins 33,41,49] [--exclude id,…]
 */
import * as fs from 'node:fs';
import { option } from './argv';
import { type Combine, combineForecasts } from '../../engines/forecast/auto';
import { mase, naiveScale } from '../../engines/forecast/metrics';
import type { ModelForecast } from '../../engines/forecast/models/types';

const argv = process.argv.slice(2);
const opt = (k: string, d?: string): string => option(argv, k, d);
interface Cached { id: string; m: number; train: number[]; test: number[]; full: Record<string, ModelForecast> }
const exclude = new Set(opt('--exclude', '').split(',').filter(Boolean));
const series = (JSON.parse(fs.readFileSync(opt('--cache'), 'utf8')) as { series: Cached[] }).series.filter((s) => !exclude.has(s.id));
const bins = [0, ...opt('--bins', '33,41,49,53,57,65,81').split(',').map(Number), Infinity];
const point = (s: Cached, members: string, combine: Combine): number[] => {
  const mean = combineForecasts(members.split('+').map((m) => s.full[m]), [], combine).mean;
  return s.train.every((v) => v >= 0) ? mean.map((v) => Math.max(0, v)) : mean;
};
const [a, b] = [opt('--a'), opt('--b')];
const [ca, cb] = [opt('--combine-a', 'mean') as Combine, opt('--combine-b', 'mean') as Combine];
console.log(`B − A per series, A = ${ca} of ${a}, B = ${cb} of ${b}`);
for (let i = 0; i + 1 < bins.length; i++) {
  const part = series.filter((s) => s.train.length >= bins[i] && s.train.length < bins[i + 1]);
  if (!part.length) continue;
  const d = part.map((s) => mase(s.test, point(s, b, cb), naiveScale(s.train, s.m)) - mase(s.test, point(s, a, ca), naiveScale(s.train, s.m)));
  const md = d.reduce((x, y) => x + y, 0) / d.length;
  const se = d.length > 1 ? Math.sqrt(d.reduce((x, y) => x + (y - md) ** 2, 0) / (d.length - 1) / d.length) : 0;
  console.log(`[${bins[i]}, ${bins[i + 1]})  ${String(part.length).padStart(4)} series  ${md >= 0 ? '+' : ''}${md.toFixed(4)} ± ${se.toFixed(4)}`);
}
