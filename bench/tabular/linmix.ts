/**
 * Experiment (bench/RESULTS.md, thirteenth round of issue 15): the linear member fitted on binary sets of
 * at most 5,000 rows whatever its blend weight and compute budget, and the test ROC AUC of fixed
 * mixtures of the trees' and the member's raw scores (w0: trees alone, w1: the member alone) beside
 * 12.0.0's (final) and the blend weight 12.0.0's greedy selection gives (blendW).
 *
 *   tsx bench/tabular/linmix.ts [--data DIR] [--only a,b] [--seeds 0,1,2]
 */
import { predictRows } from '../../engines/tabular/index';
import { categoryRuleFor, prepare, trainPrepared, resolveConfigV12 } from '../../engines/tabular/pipeline';
import { fitCore } from '../../engines/tabular/train';
import { encodeRows } from '../../engines/tabular/schema';
import { predictRaw } from '../../engines/tabular/predictor';
import { basisMatrix, fitBasis, fitLinear, DEFAULT_LINEAR_OPTIONS } from '../../engines/tabular/linear';
import { blendWeights } from '../../engines/tabular/portfolio';
import { rocAuc } from '../../engines/tabular/metrics';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const seeds = (arg('seeds') ?? '0').split(',').map(Number);
const auc = (y: number[], p: ArrayLike<number>) => rocAuc(y, Array.from(p));
const W = [0, 0.25, 0.5, 0.75, 1];
for (const entry of manifestEntries(dataDir, only)) {
  if (entry.task !== 'binary' || Number(entry.rows) > 5000) continue;
  for (const seed of seeds) {
    const d = loadDataset(dataDir, entry, 5, seed);
    const res: Record<string, number[]> = {};
    const push = (k: string, v: number) => (res[k] ??= []).push(v);
    for (let f = 0; f < 5; f++) {
      const { train, test, yTest } = foldSplit(d, f);
      const p = prepare(train, 'target', 'classification', categoryRuleFor('12.0.0'));
      const flip = String(p.analysis.target.classes?.[1]) !== d.classKeys[1];
      const yT = flip ? yTest.map((v) => 1 - v) : yTest;
      const full = trainPrepared(p, { engineVersion: '12.0.0', seed });
      push('final', auc(yTest, predictRows(full.model, test).map((q) => q.probabilities?.[d.classKeys[1]] ?? 0)));
      const Xt = encodeRows(test, p.analysis.columns, p.F);
      const nt = test.length;
      const trees = fitCore({ X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses }, resolveConfigV12(p), seed);
      const rT = predictRaw(trees.predictor, Xt, nt);
      const basis = fitBasis(p.X, p.n, p.F, p.categorical, DEFAULT_LINEAR_OPTIONS.hinges);
      const D = basis.termFeature.length;
      const Z = basisMatrix(basis, p.X, p.n, p.F);
      const fit = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, trees.foldModels.map((fm) => fm.validRows), DEFAULT_LINEAR_OPTIONS);
      if (!fit) continue;
      const Zt = basisMatrix(basis, Xt, nt, p.F);
      const rL = new Float64Array(nt);
      for (let i = 0; i < nt; i++) { let s = fit.intercept[0]; for (let q = 0; q < D; q++) s += Zt[i * D + q] * fit.coef[q]; rL[i] = s; }
      for (const w of W) push(`w${w}`, auc(yT, rT.map((v, i) => (1 - w) * v + w * rL[i])));
      const bl = blendWeights([trees.oofRaw, fit.oofRaw], p.y, trees.lossName, 1, DEFAULT_LINEAR_OPTIONS.blendSteps, DEFAULT_LINEAR_OPTIONS.blendStart);
      push('blendW', bl.weights[1]);
    }
    const m = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
    console.log(`${d.name.padEnd(16)} s${seed}`, Object.entries(res).map(([k, v]) => `${k}=${m(v).toFixed(4)}`).join(' '));
  }
}
