/**
 * Experiment (bench/RESULTS.md, thirteenth round of issue 15): a member of CatBoost-style ordered
 * target statistics, mixed into 12.0.0's outputs by an out-of-fold weight. Binary sets with text
 * columns. On each benchmark fold, 12.0.0 is trained; then on each of its own internal folds a
 * second booster (12.0.0's configuration) is trained on the numeric columns plus, for every text
 * column and every pair of the first `--pair-cols` text columns (`--no-pairs`: none), the
 * statistic (positives + a · prior) / (rows + a) (`--a`, default 1): a training row's over the
 * training rows before it in a random permutation (never its own target), a held-out or test row's
 * over all the fold's training rows. The text columns themselves are left out (`--keep-cats` keeps
 * them). The member's weight in the probability mixture is chosen on the out-of-fold rows by ROC AUC
 * (mixAUC) or log loss (mixLL) over 0, 0.05, …, 1; mix50 is a fixed half. CPU seconds of the model and
 * of the member are printed apart.
 *
 *   tsx bench/tabular/tsmember.ts [--data DIR] [--only a,b] [--seed 0] [--pair-cols 12] [--no-pairs] [--keep-cats] [--a 1]
 */
import { predictRows } from '../../engines/tabular/index';
import { categoryRuleFor, prepare, trainPrepared, resolveConfigV12 } from '../../engines/tabular/pipeline';
import { encodeRows } from '../../engines/tabular/schema';
import { fitBins, transformBins } from '../../engines/tabular/binning';
import { boost, earlyStoppingCallback } from '../../engines/tabular/gbdt';
import { makeLoss, sigmoid } from '../../engines/tabular/loss';
import { predictRaw } from '../../engines/tabular/predictor';
import { rocAuc } from '../../engines/tabular/metrics';
import { Prng } from '../../engines/tabular/prng';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';
import { cpuSeconds } from './measure';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const seed = Number(arg('seed') ?? 0);
const maxPairCols = Number(arg('pair-cols') ?? 12);
const keepCats = process.argv.includes('--keep-cats');
const prior_a = Number(arg('a') ?? 1);
const noPairs = process.argv.includes('--no-pairs');

function auc(y: ArrayLike<number>, p: ArrayLike<number>): number { return rocAuc(Array.from(y), Array.from(p)); }
function logloss(y: ArrayLike<number>, p: ArrayLike<number>): number {
  let s = 0; for (let i = 0; i < y.length; i++) { const q = Math.min(1 - 1e-15, Math.max(1e-15, p[i])); s -= y[i] ? Math.log(q) : Math.log(1 - q); } return s / y.length;
}

const tot: Record<string, number[]> = {};
for (const entry of manifestEntries(dataDir, only)) {
  if (entry.task !== 'binary' || entry.has_categorical !== 'yes') continue;
  const d = loadDataset(dataDir, entry, 5, seed);
  const res: Record<string, number[]> = {};
  const push = (k: string, v: number) => (res[k] ??= []).push(v);
  let cpuModel = 0, cpuMember = 0;
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    let t0 = cpuSeconds();
    const p = prepare(train, 'target', 'classification', categoryRuleFor('12.0.0'));
    const r = trainPrepared(p, { engineVersion: '12.0.0', seed });
    cpuModel += cpuSeconds() - t0;
    const pFinal = predictRows(r.model, test).map((q) => q.probabilities?.[d.classKeys[1]] ?? 0);
    // the model's class 1 is p.analysis.target.classes[1]; bench's classKeys sorted by string: check alignment
    t0 = cpuSeconds();
    const Xt = encodeRows(test, p.analysis.columns, p.F);
    const nt = test.length;
    const cats: number[] = [];
    const nums: number[] = [];
    for (let j = 0; j < p.F; j++) (p.categorical[j] > 0 ? cats : nums).push(j);
    const keys: number[][] = cats.map((c) => [c]);
    if (!noPairs) { const pc = cats.slice(0, maxPairCols); for (let a = 0; a < pc.length; a++) for (let b = a + 1; b < pc.length; b++) keys.push([pc[a], pc[b]]); }
    const base = keepCats ? Array.from({ length: p.F }, (_, j) => j) : nums;
    const W = base.length + keys.length;
    const keyOf = (X: Float64Array, F: number, i: number, k: number[]): string => k.map((c) => { const v = X[i * F + c]; return Number.isNaN(v) ? 'm' : String(v); }).join(',');
    const cfg = resolveConfigV12(p);
    const oofRaw = new Float64Array(p.n).fill(NaN);
    const testRaw = new Float64Array(nt);
    const folds = r.core.foldModels;
    const prior = p.y.reduce((s, v) => s + v, 0) / p.n;
    folds.forEach((fm, m) => {
      const inV = new Uint8Array(p.n); for (const i of fm.validRows) inV[i] = 1;
      const tr: number[] = []; for (let i = 0; i < p.n; i++) if (!inV[i]) tr.push(i);
      const va = Array.from(fm.validRows);
      const build = (rows: number[], X: Float64Array, F: number, stat: (k: number, i: number) => number): Float64Array => {
        const Z = new Float64Array(rows.length * W);
        rows.forEach((i, j) => {
          base.forEach((c, q) => (Z[j * W + q] = X[i * F + c]));
          keys.forEach((_, q) => (Z[j * W + base.length + q] = stat(q, i)));
        });
        return Z;
      };
      // ordered statistics over a permutation of the training rows
      const order = new Prng(seed + 77 + m).shuffle(Int32Array.from(tr));
      const ordStat = keys.map(() => new Float64Array(p.n));
      const fullTabs = keys.map(() => new Map<string, [number, number]>());
      keys.forEach((k, q) => {
        const seen = new Map<string, [number, number]>();
        for (const i of order) {
          const key = keyOf(p.X, p.F, i, k);
          const a = seen.get(key) ?? [0, 0];
          ordStat[q][i] = (a[0] + prior_a * prior) / (a[1] + prior_a);
          a[0] += p.y[i]; a[1] += 1; seen.set(key, a);
        }
        fullTabs[q] = seen;
      });
      const full = (X: Float64Array, F: number) => (q: number, i: number): number => { const a = fullTabs[q].get(keyOf(X, F, i, keys[q])) ?? [0, 0]; return (a[0] + prior_a * prior) / (a[1] + prior_a); };
      const Ztr = build(tr, p.X, p.F, (q, i) => ordStat[q][i]);
      const Zva = build(va, p.X, p.F, full(p.X, p.F));
      const Zte = build(Array.from({ length: nt }, (_, i) => i), Xt, p.F, full(Xt, p.F));
      const catFlags = base.map((c) => (keepCats ? p.categorical[c] : 0)).concat(keys.map(() => 0));
      const info = fitBins(Ztr, tr.length, W, catFlags, 255, tr.length < 100 ? 1 : 3);
      const ytr = Float64Array.from(tr, (i) => p.y[i]);
      const yva = Float64Array.from(va, (i) => p.y[i]);
      const res2 = boost({ bins: transformBins(info, Ztr, tr.length, W), n: tr.length, y: ytr }, { bins: transformBins(info, Zva, va.length, W), n: va.length, y: yva }, info, W, makeLoss('log_loss', 2, ytr),
        { grower: cfg.grower, learningRate: cfg.learningRate, maxRounds: cfg.maxRounds, subsample: cfg.subsample, colsample: cfg.colsample, seed: seed + 991 + m },
        [earlyStoppingCallback(cfg.earlyStoppingRounds, cfg.earlyStoppingMinDelta, true)]);
      va.forEach((i, j) => (oofRaw[i] = (res2.validRaw as Float64Array)[j]));
      const tRaw = predictRaw(res2.predictor, Zte, nt);
      for (let i = 0; i < nt; i++) testRaw[i] += tRaw[i] / folds.length;
    });
    cpuMember += cpuSeconds() - t0;
    // model oof (trees+linear), member oof
    const held: number[] = []; for (let i = 0; i < p.n; i++) if (!Number.isNaN(oofRaw[i]) && !Number.isNaN(r.core.oofRaw[i])) held.push(i);
    // class orientation: the engine's class 1 vs bench classKeys[1]
    const flip = String(p.analysis.target.classes?.[1]) !== d.classKeys[1];
    const yh = held.map((i) => p.y[i]);
    const pm = held.map((i) => sigmoid(r.core.oofRaw[i]));
    const pt = held.map((i) => sigmoid(oofRaw[i]));
    let bestA = { s: auc(yh, pm), w: 0 }, bestL = { s: logloss(yh, pm), w: 0 };
    for (let s = 1; s <= 20; s++) {
      const w = s / 20;
      const mix = pm.map((v, j) => (1 - w) * v + w * pt[j]);
      const a = auc(yh, mix); if (a > bestA.s) bestA = { s: a, w };
      const l = logloss(yh, mix); if (l < bestL.s) bestL = { s: l, w };
    }
    const memTest = Array.from(testRaw, (v) => (flip ? 1 - sigmoid(v) : sigmoid(v)));
    const mixT = (w: number) => pFinal.map((v, j) => (1 - w) * v + w * memTest[j]);
    push('final', auc(yTest, pFinal));
    push('member', auc(yTest, memTest));
    push('mixAUC', auc(yTest, mixT(bestA.w)));
    push('mixLL', auc(yTest, mixT(bestL.w)));
    push('mix50', auc(yTest, mixT(0.5)));
    push('wA', bestA.w); push('wL', bestL.w);
    push('oofModel', auc(yh, pm)); push('oofMember', auc(yh, pt));
  }
  const m = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
  for (const k of ['final', 'member', 'mixAUC', 'mixLL', 'mix50']) (tot[k] ??= []).push(m(res[k]));
  console.log(d.name.padEnd(16), Object.entries(res).map(([k, v]) => `${k}=${m(v).toFixed(4)}`).join(' '), `cpu ${cpuModel.toFixed(1)}/${cpuMember.toFixed(1)}`);
}
const m = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
console.log('MEAN', Object.entries(tot).map(([k, v]) => `${k}=${m(v).toFixed(4)}`).join(' '));
