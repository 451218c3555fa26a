/**
 * Compares our scores in one benchmark JSON (e.g. an experiment run with --peers none) against the
 * peers' scores in another (a full run): `tsx bench/tabular/compare.ts OURS.json PEERS.json`.
 * Fit times are compared as the run's own seconds (fit_s_per_1k x training rows), so only runs of the
 * same fold count compare.
 */
import * as fs from 'fs';

interface Res { metric: string; score: number; higher_is_better: boolean; fit_s_per_1k: number; accuracy?: number }
interface File { datasets: Array<{ name: string; task: string; results: Record<string, Res> }>; summary?: { folds?: number } }

const [oursFile, peersFile] = process.argv.slice(2);
const ours = JSON.parse(fs.readFileSync(oursFile, 'utf8')) as File;
const peers = JSON.parse(fs.readFileSync(peersFile, 'utf8')) as File;
const byName = new Map(peers.datasets.map((d) => [d.name, d]));
const folds = ours.summary?.folds ?? 5;
const manifest = new Map(
  fs.readFileSync(`${__dirname}/../../../shared/data/tabular/manifest.csv`, 'utf8').split('\n').slice(1)
    .filter((l) => l.trim()).map((l) => [l.split(',')[0], Number(l.split(',')[2])] as const),
);
const better = (o: Res, p: Res): boolean => (o.higher_is_better ? o.score > p.score : o.score < p.score);
for (const d of ours.datasets) {
  const p = byName.get(d.name);
  const o = d.results.ours;
  if (!o || !p) continue;
  const cells = ['lightgbm', 'catboost'].map((s) => {
    const x = p.results[s];
    return x ? `${s.slice(0, 3)} ${x.score.toFixed(4)} ${better(o, x) ? 'WIN ' : 'loss'}` : '';
  });
  const base = p.results.ours;
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} ours ${o.score.toFixed(4)} (before ${base ? base.score.toFixed(4) : '-'}) ${cells.join(' | ')} fit ${o.fit_s_per_1k.toFixed(3)} s/1k`);
}
for (const peer of ['lightgbm', 'sklearn_hgb', 'catboost']) {
  let wins = 0;
  let n = 0;
  let aucO = 0;
  let aucP = 0;
  let nb = 0;
  let secO = 0;
  let secP = 0;
  const ratios: number[] = [];
  for (const d of ours.datasets) {
    const o = d.results.ours;
    const l = byName.get(d.name)?.results[peer];
    if (!o || !l) continue;
    wins += better(o, l) ? 1 : 0;
    n++;
    if (d.task === 'binary') {
      aucO += o.score;
      aucP += l.score;
      nb++;
    }
    ratios.push(o.fit_s_per_1k / l.fit_s_per_1k);
    const trainK = ((manifest.get(d.name) ?? 0) * (1 - 1 / folds)) / 1000;
    secO += o.fit_s_per_1k * trainK * folds;
    secP += l.fit_s_per_1k * trainK * folds;
  }
  if (n === 0) continue;
  ratios.sort((a, b) => a - b);
  // the same convention as the summary of run.ts: the upper middle element
  const med = ratios[Math.floor(ratios.length / 2)];
  console.log(
    `vs ${peer}: wins ${wins}/${n}; binary AUC ours ${(aucO / Math.max(1, nb)).toFixed(4)} vs ${(aucP / Math.max(1, nb)).toFixed(4)} ` +
      `(${((aucO - aucP) / Math.max(1, nb)).toFixed(4)}); fit time summed ${(secO / secP).toFixed(2)}x (${secO.toFixed(0)} s vs ${secP.toFixed(0)} s), median ${med.toFixed(2)}x`,
  );
}
