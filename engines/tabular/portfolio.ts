/**
 * Engine 2: a portfolio of boosted members of different shapes, trained on the same internal folds,
 * combined with weights fitted on their out-of-fold predictions.
 *
 * Every member is a cross-fit tree ensemble (train.ts), so the combination is again a weighted sum
 * of trees: the blend is merged into one flat predictor and is served by the same code, in the same
 * artefact format, as an engine-1 model.
 */
import { makeLoss, type LossName } from './loss';
import { mergePredictors } from './predictor';
import { fitCore, type CoreInput, type CoreResult, type EngineConfig, type FoldModel } from './train';

export const MEMBER_NAMES = ['leafwise', 'depthwise', 'shallow', 'deep', 'symmetric'] as const;
export type MemberName = (typeof MEMBER_NAMES)[number];

/**
 * Which members a dataset gets (the compute budget): every dataset gets leafwise and depthwise; the
 * shallow member only with at most 20 encoded features (its nearly additive fit is for smooth
 * low-dimensional problems; in high dimension it runs to its round cap, e.g. 30x engine 1's time on
 * spambase and sonar, for no weight); the deep member only from 2,000 training rows, at most 20
 * features and one output (a tree of up to 255 leaves at 20 rows per leaf has nothing to fit below
 * 2,000 rows: it got no weight on pima or breast_cancer and the most on phoneme and
 * wine_quality_white; on wide data and with one tree per class its cost dominated the whole fit,
 * e.g. spambase 40x engine 1's time). So the budget grows with the data: two or three members
 * below 2,000 rows, up to four above.
 */
export function membersFor(n: number, F: number, outputs = 1): MemberName[] {
  const out: MemberName[] = ['leafwise', 'depthwise'];
  if (F <= 20) out.push('shallow');
  if (n >= 2000 && F <= 20 && outputs === 1) out.push('deep');
  return out;
}

/**
 * Engine 3's members: engine 1's leaf-wise ensemble and a symmetric (oblivious) one, for every task
 * and size (fewer, cheaper members than engine 2: the symmetric trees are the shape CatBoost grows,
 * the one the leaf-wise member lacks; see memberConfig).
 */
export const MEMBERS_V3: readonly MemberName[] = ['leafwise', 'symmetric'];

/**
 * The members, as changes of the engine-1 configuration (`base`, which already holds the
 * size-dependent rules: cross-fit folds, min data per leaf, feature sampling):
 * - leafwise: engine 1 itself (31 leaves grown best-first, learning rate 0.1);
 * - depthwise: depth-limited trees (depth 6, up to 64 leaves) with CatBoost's L2 of 3 and a smaller
 *   learning rate (0.05): balanced trees with stronger leaf shrinkage generalise better than
 *   best-first growth when the data is small or noisy;
 * - shallow: depth-2 trees (at most 4 leaves, pairwise interactions only) with L2 of 5: nearly
 *   additive, the tree form of a spline model, for smooth low-dimensional problems (learning rate
 *   0.05 below 2,000 rows, 0.1 above);
 * - deep: trees of up to 255 leaves and depth 8, L2 3, learning rate 0.05: high-order interactions
 *   where there are rows enough to fit them (phoneme, wine quality).
 * Early-stopping patience is kept the same in learning-rate units (20 rounds at 0.1, 40 at 0.05);
 * every member keeps engine 1's cap of 1,000 rounds, which bounds the trees a prediction walks (with
 * 2,000 for the members at 0.05, a penguins model had ~24,000 trees and scored 3 ms per row).
 */
export function memberConfig(name: MemberName, base: EngineConfig, n: number, outputs = 1): EngineConfig {
  const patience = (lr: number): number => Math.ceil((base.earlyStoppingRounds * base.learningRate) / lr);
  switch (name) {
    case 'leafwise':
      return base;
    case 'depthwise':
      return {
        ...base,
        learningRate: 0.05,
        earlyStoppingRounds: patience(0.05),
        grower: { ...base.grower, maxLeaves: 64, maxDepth: 6, lambdaL2: 3 },
      };
    case 'shallow': {
      // learning rate 0.05 where rows are few (0.1 lost AUC on credit_g, pima and breast_cancer),
      // 0.1 from 2,000 rows, where 0.05 runs hundreds of rounds per model (adult: twice engine 1's time)
      const lr = n < 2000 ? 0.05 : base.learningRate;
      return {
        ...base,
        learningRate: lr,
        earlyStoppingRounds: patience(lr),
        grower: { ...base.grower, maxLeaves: 4, maxDepth: 2, lambdaL2: 5 },
      };
    }
    case 'symmetric': {
      // learning rate 0.05 below 2,000 rows with one output; 0.1 otherwise (a multiclass round grows
      // one tree per class, and at 0.1 it already cost several times engine 1 on small multiclass data)
      const lr = n < 2000 && outputs === 1 ? 0.05 : base.learningRate;
      return {
        ...base,
        learningRate: lr,
        earlyStoppingRounds: patience(lr),
        grower: { ...base.grower, maxLeaves: 64, maxDepth: 6, lambdaL2: 3, symmetric: true },
      };
    }
    case 'deep':
      return {
        ...base,
        learningRate: 0.05,
        earlyStoppingRounds: patience(0.05),
        grower: { ...base.grower, maxLeaves: 255, maxDepth: 8, lambdaL2: 3 },
      };
  }
}

export interface BlendResult {
  /** one weight per member, non-negative, summing to one */
  weights: Float64Array;
  /** loss of the blend on the rows every member held out */
  loss: number;
  /** loss of each member alone on the same rows */
  memberLoss: Float64Array;
}

/**
 * Greedy ensemble selection with replacement (Caruana et al., 2004) on out-of-fold raw scores:
 * start from the best member alone, then repeatedly add (again) the member whose addition lowers the
 * blend's loss most, and stop when no addition lowers it. The weights are the selection counts over
 * the number of selections, so they sum to one, and the blend is never worse on these rows than the
 * best single member. Discrete weights over at most `steps` selections regularise the fit (a
 * continuous optimum on the same rows overfits them).
 */
export function blendWeights(oofs: Float64Array[], y: Float64Array, lossName: LossName, K: number, steps = 25, start: 'best' | 'all' = 'best'): BlendResult {
  const M = oofs.length;
  const n = y.length;
  const held: number[] = [];
  for (let i = 0; i < n; i++) if (oofs.every((o) => !Number.isNaN(o[i * K]))) held.push(i);
  const yh = Float64Array.from(held, (i) => y[i]);
  const rows = oofs.map((o) => {
    const r = new Float64Array(held.length * K);
    held.forEach((i, j) => {
      for (let k = 0; k < K; k++) r[j * K + k] = o[i * K + k];
    });
    return r;
  });
  const loss = makeLoss(lossName, lossName === 'softmax' ? K : 1, yh);
  const memberLoss = Float64Array.from(rows, (r) => (held.length > 0 ? loss.loss(yh, r) : Infinity));
  const counts = new Float64Array(M);
  let best = 0;
  for (let m = 1; m < M; m++) if (memberLoss[m] < memberLoss[best]) best = m;
  const sum = new Float64Array(held.length * K);
  let total = 0;
  let current: number;
  if (start === 'all') {
    // every member once, then greedy additions: shrinks the weights towards the plain average
    counts.fill(1);
    total = M;
    for (const r of rows) for (let j = 0; j < sum.length; j++) sum[j] += r[j];
    const mean = Float64Array.from(sum, (v) => v / M);
    current = held.length > 0 ? loss.loss(yh, mean) : Infinity;
  } else {
    counts[best] = 1;
    total = 1;
    current = memberLoss[best];
    sum.set(rows[best]);
  }
  const trial = new Float64Array(sum.length);
  for (let s = 1; s < steps && held.length > 0; s++) {
    let pick = -1;
    let pickLoss = current;
    for (let m = 0; m < M; m++) {
      const r = rows[m];
      for (let j = 0; j < trial.length; j++) trial[j] = (sum[j] + r[j]) / (total + 1);
      const l = loss.loss(yh, trial);
      // strictly better by a relative margin, so ties and rounding noise do not move the weights
      if (l < pickLoss - 1e-12 * Math.abs(pickLoss)) {
        pick = m;
        pickLoss = l;
      }
    }
    if (pick < 0) break;
    counts[pick]++;
    total++;
    current = pickLoss;
    const r = rows[pick];
    for (let j = 0; j < sum.length; j++) sum[j] += r[j];
  }
  if (start === 'all' && !(current <= memberLoss[best])) {
    // never worse than the best single member on these rows
    const only = new Float64Array(M);
    only[best] = 1;
    return { weights: only, loss: memberLoss[best], memberLoss };
  }
  const weights = Float64Array.from(counts, (c) => c / total);
  return { weights, loss: current, memberLoss };
}

export interface PortfolioResult {
  /** the blend as one core result: merged predictor, blended out-of-fold scores, blended fold models */
  core: CoreResult;
  members: MemberName[];
  blend: BlendResult;
}

/**
 * Trains every member on the same internal folds (the same seed gives the same fold split), fits the
 * blend weights on their out-of-fold scores, and merges the members with a non-zero weight.
 */
export function fitPortfolio(
  input: CoreInput,
  configs: Array<{ name: MemberName; cfg: EngineConfig }>,
  seed: number,
  onRound?: (done: number, total: number) => void,
  blendStart: 'best' | 'all' = 'best',
): PortfolioResult {
  const M = configs.length;
  const cores: CoreResult[] = configs.map((c, m) =>
    fitCore(input, c.cfg, seed, onRound ? (done, total) => onRound(m * total + done, M * total) : undefined),
  );
  const K = cores[0].oofRaw.length / input.n;
  const blend = blendWeights(cores.map((c) => c.oofRaw), input.y, cores[0].lossName, K, 25, blendStart);
  const used = cores.map((_, m) => m).filter((m) => blend.weights[m] > 0);
  const w = used.map((m) => blend.weights[m]);
  const predictor = used.length === 1 ? cores[used[0]].predictor : mergePredictors(used.map((m) => cores[m].predictor), w);
  const oofRaw = new Float64Array(cores[0].oofRaw.length);
  used.forEach((m, j) => {
    const o = cores[m].oofRaw;
    for (let i = 0; i < o.length; i++) oofRaw[i] += w[j] * o[i];
  });
  // members share the fold split, so fold j of the blend is the blend of the members' fold-j models
  const foldModels: FoldModel[] = cores[used[0]].foldModels.map((fm, j) => ({
    predictor: used.length === 1 ? fm.predictor : mergePredictors(used.map((m) => cores[m].foldModels[j].predictor), w),
    validRows: fm.validRows,
    rounds: used.reduce((s, m) => s + cores[m].foldModels[j].rounds, 0),
  }));
  return {
    core: { predictor, oofRaw, foldModels, info: cores[used[0]].info, lossName: cores[used[0]].lossName },
    members: configs.map((c) => c.name),
    blend,
  };
}
