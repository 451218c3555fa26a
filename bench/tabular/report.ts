/**
 * Markdown table from a benchmark JSON file: `tsx bench/tabular/report.ts results.json`.
 */
import * as fs from 'fs';

interface Res { metric: string; score: number; higher_is_better: boolean; fit_s_per_1k: number; predict_s_per_1k: number; accuracy?: number }
interface File { datasets: Array<{ name: string; task: string; results: Record<string, Res> }>; summary: Record<string, unknown> }

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8')) as File;
const systems = ['ours', 'lightgbm', 'sklearn_hgb', 'catboost'];
const f = (x: number | undefined, d: number): string => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
const verdict = (o: Res | undefined, p: Res | undefined): string => {
  if (!o || !p) return '-';
  if (o.score === p.score) return 'tie';
  return (o.higher_is_better ? o.score > p.score : o.score < p.score) ? 'win' : 'loss';
};
const lines: string[] = [];
lines.push('| dataset | task | metric | ours | LightGBM | sklearn HGB | CatBoost | ours vs LightGBM | ours vs CatBoost | fit s/1k rows (ours / LGBM / HGB / CatBoost) | predict s/1k rows (ours / LGBM / HGB / CatBoost) |');
lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
for (const d of file.datasets) {
  const r = d.results;
  const o = r.ours;
  const digits = (o ?? r.lightgbm)?.metric === 'rmse' ? 3 : 4;
  const cell = (s: string): string => {
    const x = r[s];
    if (!x) return '-';
    return `${f(x.score, digits)}${x.accuracy !== undefined ? ` (acc ${f(x.accuracy, 3)})` : ''}`;
  };
  lines.push(`| ${d.name} | ${d.task} | ${o?.metric ?? r.lightgbm?.metric ?? '-'} | ${cell('ours')} | ${cell('lightgbm')} | ${cell('sklearn_hgb')} | ${cell('catboost')} | ${verdict(o, r.lightgbm)} | ${verdict(o, r.catboost)} | ${systems.map((s) => f(r[s]?.fit_s_per_1k, 3)).join(' / ')} | ${systems.map((s) => f(r[s]?.predict_s_per_1k, 4)).join(' / ')} |`);
}
console.log(lines.join('\n'));
console.log('\n```json\n' + JSON.stringify(file.summary, null, 2) + '\n```');
