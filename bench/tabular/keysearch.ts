/**
 * Experiment (bench/RESULTS.md, thirteenth round of issue 15): two other searches for the group
 * member's key (engine 11's searchGroupKey starts from a constant prior, and on resume_names it finds
 * special+city+… where the job advert, city+wanted+requirements+reqexp+reqcomm+reqeduc+reqcomp+reqorg+
 * industry+equal+minimum, is the key that pays: `groupkey.ts`). Binary sets, the first benchmark
 * fold(s), 12.0.0's out-of-fold outputs:
 * - `--method model` (default): greedy, each row's statistic smoothed towards the model's own
 *   out-of-fold output worth `--s` rows instead of towards the prior;
 * - `--method structure`: target-free, columns that co-vary as a block (a seed pair sharing the most
 *   of the smaller one's entropy, then the column most determined by the set, while at least
 *   `--min-ratio` of its entropy is).
 *
 *   tsx bench/tabular/keysearch.ts [--data DIR] [--only a,b] [--folds 1] [--s 1] [--method model|structure] [--min-ratio 0.5]
 */
import { categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { sigmoid } from '../../engines/tabular/loss';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const seed = Number(arg('seed') ?? 0);
const S = Number(arg('s') ?? 1);
const method = arg('method') ?? 'model';
const minRatio = Number(arg('min-ratio') ?? 0.5);
for (const entry of manifestEntries(dataDir, only)) {
  if (entry.task !== 'binary' && method === 'model') continue;
  const d = loadDataset(dataDir, entry, 5, seed);
  const out: string[] = [];
  for (let f = 0; f < Number(arg('folds') ?? 1); f++) {
    const { train } = foldSplit(d, f);
    const p = prepare(train, 'target', d.task === 'regression' ? 'regression' : 'classification', categoryRuleFor('12.0.0'));
    if (method === 'structure') {
      const k = structKey(p.X, p.n, p.F, minRatio);
      out.push(`[${k.cols.map((c) => p.analysis.features[c].name).join('+')}] groups ${k.groups} ratios ${k.ratios.map((v) => v.toFixed(2)).join(' ')}`);
      continue;
    }
    const r = trainPrepared(p, { engineVersion: '12.0.0', seed });
    const n = p.n;
    const fold = new Int32Array(n).fill(-1);
    r.core.foldModels.forEach((fm, m) => fm.validRows.forEach((i) => (fold[i] = m)));
    const M = r.core.foldModels.length;
    const pm = Float64Array.from(r.core.oofRaw, sigmoid);
    const names = p.analysis.features.map((x) => x.name);
    // column codes
    const codes: Int32Array[] = [];
    const distinct: number[] = [];
    for (let c = 0; c < p.F; c++) {
      const m = new Map<number, number>();
      codes.push(Int32Array.from({ length: n }, (_, i) => { const v = p.X[i * p.F + c]; const k = Number.isNaN(v) ? -1e308 : v; let g = m.get(k); if (g === undefined) { g = m.size; m.set(k, g); } return g; }));
      distinct.push(m.size);
    }
    const lossOf = (gid: Int32Array, G: number): number => {
      const tot = new Float64Array(G * 2), inF = new Float64Array(G * M * 2);
      for (let i = 0; i < n; i++) { if (fold[i] < 0) continue; tot[gid[i] * 2] += p.y[i]; tot[gid[i] * 2 + 1]++; inF[(gid[i] * M + fold[i]) * 2] += p.y[i]; inF[(gid[i] * M + fold[i]) * 2 + 1]++; }
      let l = 0, c = 0;
      for (let i = 0; i < n; i++) {
        if (fold[i] < 0) continue;
        const g = gid[i];
        const s1 = tot[g * 2] - inF[(g * M + fold[i]) * 2], cn = tot[g * 2 + 1] - inF[(g * M + fold[i]) * 2 + 1];
        const q = Math.min(1 - 1e-12, Math.max(1e-12, (s1 + S * pm[i]) / (cn + S)));
        l -= p.y[i] ? Math.log(q) : Math.log(1 - q); c++;
      }
      return l / c;
    };
    let gid: Int32Array = new Int32Array(n), G = 1;
    let modelLoss = 0, held = 0;
    for (let i = 0; i < n; i++) if (fold[i] >= 0) { const q = Math.min(1 - 1e-12, Math.max(1e-12, pm[i])); modelLoss -= p.y[i] ? Math.log(q) : Math.log(1 - q); held++; }
    modelLoss /= held;
    let loss = lossOf(gid, G);
    const key: number[] = [];
    for (;;) {
      let best: { c: number; gid: Int32Array; G: number; loss: number } | null = null;
      for (let c = 0; c < p.F; c++) {
        if (key.includes(c) || distinct[c] < 2 || distinct[c] > 255) continue;
        const m = new Map<number, number>();
        const g2 = Int32Array.from({ length: n }, (_, i) => { const k = gid[i] * 256 + codes[c][i]; let g = m.get(k); if (g === undefined) { g = m.size; m.set(k, g); } return g; });
        const l = lossOf(g2, m.size);
        if (!best || l < best.loss) best = { c, gid: g2, G: m.size, loss: l };
      }
      if (!best || !(best.loss < loss)) break;
      key.push(best.c); gid = best.gid; G = best.G; loss = best.loss;
    }
    out.push(`[${key.map((c) => names[c]).join('+')}] loss ${loss.toFixed(4)} (model alone ${modelLoss.toFixed(4)}) groups ${G}`);
  }
  console.log(d.name.padEnd(16), out.join(' | '));
}

/** The structure search (`--method structure`). */
export function structKey(X: Float64Array, n: number, F: number, minRatio: number, maxValues = 255): { cols: number[]; groups: number; ratios: number[] } {
  const codes: Int32Array[] = [];
  const distinct: number[] = [];
  for (let c = 0; c < F; c++) {
    const m = new Map<number, number>();
    codes.push(Int32Array.from({ length: n }, (_, i) => { const v = X[i * F + c]; const k = Number.isNaN(v) ? -1e308 : v; let g = m.get(k); if (g === undefined) { g = m.size; m.set(k, g); } return g; }));
    distinct.push(m.size);
  }
  const H = (gid: Int32Array, G: number): number => { const cnt = new Float64Array(G); for (let i = 0; i < n; i++) cnt[gid[i]]++; let h = 0; for (const c of cnt) if (c > 0) h -= (c / n) * Math.log(c / n); return h; };
  const refine = (gid: Int32Array, c: number): { gid: Int32Array; G: number } => { const m = new Map<number, number>(); const g2 = Int32Array.from({ length: n }, (_, i) => { const k = gid[i] * 256 + codes[c][i]; let g = m.get(k); if (g === undefined) { g = m.size; m.set(k, g); } return g; }); return { gid: g2, G: m.size }; };
  const cand = Array.from({ length: F }, (_, c) => c).filter((c) => distinct[c] >= 2 && distinct[c] <= maxValues);
  const Hc = new Float64Array(F);
  for (const c of cand) Hc[c] = H(codes[c], distinct[c]);
  // seed pair: the largest share of the smaller column's entropy explained by the other
  let best: { a: number; b: number; r: number; gid: Int32Array; G: number } | null = null;
  const zero = new Int32Array(n);
  for (const a of cand) {
    const ga = refine(zero, a);
    for (const b of cand) {
      if (b <= a) continue;
      const gab = refine(ga.gid, b);
      const I = Hc[a] + Hc[b] - H(gab.gid, gab.G);
      const r = I / Math.min(Hc[a], Hc[b]);
      if (!best || r > best.r) best = { a, b, r, gid: gab.gid, G: gab.G };
    }
  }
  if (!best || best.r < minRatio) return { cols: [], groups: 1, ratios: [] };
  const cols = [best.a, best.b];
  const ratios = [best.r];
  let gid = best.gid, G = best.G, HS = H(gid, G);
  for (;;) {
    let nb: { c: number; r: number; gid: Int32Array; G: number; h: number } | null = null;
    for (const c of cand) {
      if (cols.includes(c)) continue;
      const g2 = refine(gid, c);
      const h = H(g2.gid, g2.G);
      const r = (Hc[c] + HS - h) / Hc[c];
      if (!nb || r > nb.r) nb = { c, r, gid: g2.gid, G: g2.G, h };
    }
    if (!nb || nb.r < minRatio) break;
    cols.push(nb.c); ratios.push(nb.r); gid = nb.gid; G = nb.G; HS = nb.h;
  }
  return { cols, groups: G, ratios };
}

