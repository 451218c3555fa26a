/**
 * Compares our scores in one benchmark JSON (e.g. an experiment run with --peers none) against the
 * peers' scores in another (a full run): `tsx bench/tabular/compare.ts OURS.json PEERS.json`.
 */
import * as fs from 'fs';

interface Res { metric: string; score: number; higher_is_better: boolean; fit_s_per_1k: number; accuracy?: number }
interface File { datasets: Array<{ name: string; task: string; results: Record<string, Res> }> }

const [oursFile, peersFile] = process.argv.slice(2);
const ours = JSON.parse(fs.readFileSync(oursFile, 'utf8')) as File;
const peers = JSON.parse(fs.readFileSync(peersFile, 'utf8')) as File;
const byName = new Map(peers.datasets.map((d) => [d.name, d]));
let wins = 0;
let n = 0;
let aucO = 0;
let aucL = 0;
let nb = 0;
let fitO = 0;
let fitL = 0;
// per-dataset fit ratios, and fit seconds weighted by the dataset's training rows (from the manifest)
const ratios: number[] = [];
let secO = 0;
let secL = 0;
const manifest = new Map(
  fs.readFileSync(`${__dirname}/../../../shared/data/tabular/manifest.csv`, 'utf8').split('\n').slice(1)
    .filter((l) => l.trim()).map((l) => [l.split(',')[0], Number(l.split(',')[2])] as const),
);
for (const d of ours.datasets) {
  const p = byName.get(d.name);
  const o = d.results.ours;
  const l = p?.results.lightgbm;
  const base = p?.results.ours;
  if (!o || !l) continue;
  const better = o.higher_is_better ? o.score > l.score : o.score < l.score;
  wins += better ? 1 : 0;
  n++;
  if (d.task === 'binary') {
    aucO += o.score;
    aucL += l.score;
    nb++;
  }
  fitO += o.fit_s_per_1k;
  fitL += l.fit_s_per_1k;
  ratios.push(o.fit_s_per_1k / l.fit_s_per_1k);
  const trainK = ((manifest.get(d.name) ?? 0) * 0.8) / 1000;
  secO += o.fit_s_per_1k * trainK * 5;
  secL += l.fit_s_per_1k * trainK * 5;
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} ours ${o.score.toFixed(4)} (before ${base ? base.score.toFixed(4) : '-'}) lgb ${l.score.toFixed(4)} ${better ? 'WIN ' : 'loss'} fit ${o.fit_s_per_1k.toFixed(3)} vs ${l.fit_s_per_1k.toFixed(3)} s/1k`);
}
console.log(`wins ${wins}/${n}; binary AUC ours ${(aucO / Math.max(1, nb)).toFixed(4)} lgb ${(aucL / Math.max(1, nb)).toFixed(4)}; sum fit s/1k ours ${fitO.toFixed(2)} lgb ${fitL.toFixed(2)}`);
ratios.sort((a, b) => a - b);
// the same convention as the summary of run.ts: the upper middle element
const med = ratios[Math.floor(ratios.length / 2)];
console.log(`fit time ours/lightgbm: summed ${(secO / secL).toFixed(2)}x (${secO.toFixed(0)} s vs ${secL.toFixed(0)} s), median ${med.toFixed(2)}x`);
