/**
 * Paired comparison of two runs of run.ts's `--series-out` (e.g. the engine before and after a change,
 * on the same series): per file and period, MASE and WQL of each, the mean per-series MASE difference
 * (new − old) with its standard error, and on how many series the new MASE is lower / higher / equal.
 *
 *   tsx bench/forecast/paired.ts OLD.json NEW.json
 */
import * as fs from 'node:fs';

interface Row { file: string; id: string; period: string; mase: number; smape: number; loss: number; abs: number }

const [oldFile, newFile] = process.argv.slice(2);
if (!oldFile || !newFile) throw new Error('usage: paired.ts OLD.json NEW.json');
const read = (f: string) => new Map((JSON.parse(fs.readFileSync(f, 'utf8')) as Row[]).map((r) => [`${r.file}:${r.id}`, r]));
const before = read(oldFile), after = read(newFile);
const groups = new Map<string, [Row, Row][]>();
for (const [key, o] of before) {
  const n = after.get(key);
  if (!n) continue;
  for (const g of [`${o.file} ${o.period}`, `${o.file} ALL`]) {
    const list = groups.get(g) ?? [];
    list.push([o, n]);
    groups.set(g, list);
  }
}
const f3 = (v: number) => v.toFixed(3);
console.log('| file / period | series | MASE old | MASE new | new − old per series (± s.e.) | lower / higher / equal | WQL old | WQL new |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const [g, pairs] of groups) {
  const k = pairs.length;
  const d = pairs.map(([o, n]) => n.mase - o.mase);
  const md = d.reduce((a, b) => a + b, 0) / k;
  const se = Math.sqrt(d.reduce((a, b) => a + (b - md) ** 2, 0) / Math.max(1, k - 1) / k);
  const mo = pairs.reduce((a, [o]) => a + o.mase, 0) / k, mn = pairs.reduce((a, [, n]) => a + n.mase, 0) / k;
  const wo = pairs.reduce((a, [o]) => a + o.loss, 0) / pairs.reduce((a, [o]) => a + o.abs, 0);
  const wn = pairs.reduce((a, [, n]) => a + n.loss, 0) / pairs.reduce((a, [, n]) => a + n.abs, 0);
  const lower = d.filter((v) => v < 0).length, higher = d.filter((v) => v > 0).length;
  console.log(`| ${g} | ${k} | ${f3(mo)} | ${f3(mn)} | ${md >= 0 ? '+' : '−'}${Math.abs(md).toFixed(4)} ± ${se.toFixed(4)} | ${lower} / ${higher} / ${k - lower - higher} | ${f3(wo)} | ${f3(wn)} |`);
}
