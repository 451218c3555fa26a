/**
 * Boosting loop. Combines a loss, the tree grower and the flat predictor builder. Callbacks
 * (early stopping, progress) receive a frozen state after every round, as in LightGBM's callback.py.
 */
import type { BinnedFeatureInfo } from './binning';
import { type GrowerParams, type BuiltTree, type RootCounts, PartitionRouter, TreeGrower, binColumns, leafOfRouted, routerOf } from './grower';
import { softplus, type Loss } from './loss';
import { Prng } from './prng';
import { PredictorBuilder, type FlatPredictor } from './predictor';

export interface BoostParams {
  grower: GrowerParams;
  learningRate: number;
  maxRounds: number;
  /** bagging: fraction of rows drawn (Bernoulli) for each round; 1 = all */
  subsample: number;
  /** fraction of features drawn for each round; 1 = all */
  colsample: number;
  seed: number;
  /**
   * experiments: what early stopping watches on binary log loss. 'loss' (default): the held-out rows'
   * log loss. 'calibrated': their log loss after the best affine recalibration of the logit,
   * sigmoid(a z + b) (calibratedLogLoss): the discrimination part of the log loss, which a model's
   * over- or under-confidence does not move.
   */
  stopMetric?: 'loss' | 'calibrated';
  /**
   * boosting from an offset (one output only): the training and validation rows' starting raw
   * scores, in place of the loss's constant start; the predictor then holds the trees alone (its
   * start is 0) and the offset is added at prediction by whatever produced it (the linear member).
   */
  trainOffset?: Float64Array;
  validOffset?: Float64Array;
  /** experiments: keep the validation rows' raw scores after every round (BoostResult.validPath) */
  keepValidPath?: boolean;
}

export interface BinnedSet {
  bins: Uint8Array;
  n: number;
  y: Float64Array;
}

export interface TrainingState {
  readonly iteration: number;
  readonly maxRounds: number;
  readonly trainLoss: number | null;
  readonly validLoss: number | null;
}

/** `best`: this iteration is now the one early stopping would keep (boost keeps its validation scores). */
export type CallbackResult = void | { stop: true; bestIteration: number } | { best: true };
export type TrainingCallback = (state: Readonly<TrainingState>) => CallbackResult;

/**
 * Stops when the validation loss has not improved by more than `minDelta` for `rounds` rounds;
 * keeps the best round. With `relative`, minDelta is a fraction of the first round's loss.
 */
export function earlyStoppingCallback(rounds: number, minDelta = 0, relative = false, share?: { share: number; min: number }): TrainingCallback {
  let best = Infinity;
  let bestIter = 0;
  let delta = minDelta;
  // with `share` (experiments, EngineConfig.earlyStoppingShare): a patience of `share` × the best round so far, between `min` and `rounds`
  const patience = (): number => (share ? Math.max(share.min, Math.min(rounds, Math.ceil(share.share * bestIter))) : rounds);
  return (s) => {
    if (s.validLoss === null) return;
    if (s.iteration === 1 && relative) delta = minDelta * Math.abs(s.validLoss);
    if (s.validLoss < best - delta) {
      best = s.validLoss;
      bestIter = s.iteration;
      if (s.iteration === s.maxRounds) return { stop: true, bestIteration: bestIter };
      return { best: true };
    } else if (s.iteration - bestIter >= patience()) {
      return { stop: true, bestIteration: bestIter };
    }
    if (s.iteration === s.maxRounds) return { stop: true, bestIteration: bestIter };
  };
}

/** Scores stored class-major (K x n) laid out row-major (n x K), as BoostResult gives them. */
function rowMajor(scores: Float64Array, n: number, K: number): Float64Array {
  if (K === 1) return scores;
  const out = new Float64Array(n * K);
  for (let k = 0; k < K; k++) for (let i = 0; i < n; i++) out[i * K + k] = scores[k * n + i];
  return out;
}

export interface BoostResult {
  predictor: FlatPredictor;
  /** number of rounds kept */
  rounds: number;
  validHistory: number[];
  /** raw scores on the validation set for the kept rounds */
  validRaw: Float64Array | null;
  /** with BoostParams.keepValidPath: the validation rows' raw scores (class-major) after each round grown */
  validPath?: Float64Array[];
}

/**
 * One boosted model grown a round at a time (boost's loop body), so that several models can be grown
 * in step and stopped together (train.ts, fitCore's cross-validated stopping). `step` grows a round
 * and returns the validation loss after it; `markBest` keeps the current validation scores as those of
 * the round early stopping would keep; `finish` builds the predictor of the first `kept` rounds.
 */
export class Booster {
  private readonly K: number;
  private readonly n: number;
  private readonly nv: number;
  private readonly rng: Prng;
  private readonly grower: TreeGrower;
  private readonly symGrower: TreeGrower | null;
  private readonly every: number;
  private readonly init: Float64Array;
  /** raw scores of the training rows, class-major (class k of row i at k * n + i: a tree adds to one class) */
  private readonly raw: Float64Array;
  /** raw scores of the validation rows, class-major (k * nv + i) */
  private readonly vraw: Float64Array;
  private readonly grad: Float64Array;
  private readonly hess: Float64Array;
  private readonly rows: Uint32Array;
  private readonly mask: Uint8Array;
  private readonly featOrder: Int32Array;
  private readonly router: PartitionRouter;
  private readonly outside: Uint32Array;
  private readonly outsideLeaf: Int32Array;
  private readonly validLeaf: Int32Array;
  private readonly validCols: Uint8Array;
  private readonly bestVraw: Float64Array;
  private bestVrawIteration = -1;
  /** stopMetric 'calibrated': the recalibration (a, b) of the last round, the next round's start */
  private readonly calib = Float64Array.of(1, 0);
  private readonly rounds: BuiltTree[][] = [];
  readonly validHistory: number[] = [];
  /** keepValidPath: the validation scores after each round */
  private readonly validPath: Float64Array[] = [];
  /** whether the last round split nothing anywhere (nothing more to learn) */
  exhausted = false;

  constructor(
    private readonly train: BinnedSet,
    private readonly valid: BinnedSet | null,
    private readonly info: BinnedFeatureInfo,
    private readonly F: number,
    private readonly loss: Loss,
    private readonly params: BoostParams,
  ) {
    const K = (this.K = loss.nOutputs);
    const n = (this.n = train.n);
    this.rng = new Prng(params.seed);
    this.grower = new TreeGrower(train.bins, n, F, info, params.grower);
    // engine 4: a second grower for the rounds of symmetric trees (GrowerParams.symmetricEvery)
    this.every = params.grower.symmetricEvery ?? 0;
    const symDepth = params.grower.symmetricHybridDepth ?? 6;
    this.symGrower = this.every > 0
      ? new TreeGrower(train.bins, n, F, info, { ...params.grower, symmetric: true, symmetricEvery: 0, maxDepth: symDepth, maxLeaves: 1 << symDepth, lambdaL2: params.grower.symmetricHybridL2 ?? 3 })
      : null;
    const offset = K === 1 && params.trainOffset !== undefined;
    const init = (this.init = offset ? new Float64Array(K) : loss.initScores(train.y));
    this.raw = new Float64Array(n * K);
    for (let k = 0; k < K; k++) this.raw.fill(init[k], k * n, (k + 1) * n);
    if (offset) this.raw.set(params.trainOffset as Float64Array);
    const nv = (this.nv = valid ? valid.n : 0);
    this.vraw = new Float64Array(nv * K);
    for (let k = 0; k < K; k++) this.vraw.fill(init[k], k * nv, (k + 1) * nv);
    if (offset && nv > 0) this.vraw.set(params.validOffset as Float64Array);
    this.grad = new Float64Array(n * K);
    this.hess = new Float64Array(n * K);
    this.rows = new Uint32Array(n);
    this.mask = new Uint8Array(F);
    this.featOrder = new Int32Array(F);
    // leaves of the rows outside the round's sample and of the validation rows, found by partitioning
    // them through each new tree (PartitionRouter); the sample's rows have theirs from the grower
    this.router = new PartitionRouter(Math.max(n, nv));
    this.outside = new Uint32Array(n);
    this.outsideLeaf = new Int32Array(n);
    this.validLeaf = new Int32Array(nv);
    this.validCols = valid ? binColumns(valid.bins, nv, F) : new Uint8Array(0);
    // validation scores at the iteration early stopping keeps, so they need not be rebuilt at the end
    this.bestVraw = new Float64Array(nv * K);
  }

  /** Grows the next round; the validation loss after it (null without validation rows). */
  step(): number | null {
    const { K, n, nv, rng, params, grad, hess, raw, vraw, rows, mask, featOrder, outside, outsideLeaf, validLeaf, router, info, F, loss } = this;
    const it = this.rounds.length + 1;
    let m = 0;
    if (params.subsample < 1) {
      m = rng.sampleIndices(rows, n, params.subsample);
      if (m < 2) {
        m = 0;
        for (let i = 0; i < n; i++) rows[m++] = i;
      }
    } else {
      for (let i = 0; i < n; i++) rows[i] = i;
      m = n;
    }
    // the trees read the gradients of the sample's rows only, except for out-of-bag category orders
    if (params.grower.catOrderFrom === 'outOfBag' || m === n) loss.gradHessClassMajor(this.train.y, raw, grad, hess);
    else loss.gradHessClassMajor(this.train.y, raw, grad, hess, rows, m);
    if (params.colsample < 1) {
      const take = Math.max(1, Math.round(params.colsample * F));
      for (let f = 0; f < F; f++) featOrder[f] = f;
      rng.shuffle(featOrder);
      mask.fill(0);
      for (let j = 0; j < take; j++) mask[featOrder[j]] = 1;
    } else mask.fill(1);
    // the rows outside the sample (rows[0..m) is increasing)
    let nOut = 0;
    for (let i = 0, k = 0; i < n; i++) {
      if (k < m && rows[k] === i) k++;
      else outside[nOut++] = i;
    }
    const grower = this.grower;
    const symGrower = this.symGrower;
    const trees: BuiltTree[] = [];
    const useSym = symGrower !== null && it % this.every === 0;
    // a multiclass round's trees share their rows and features: their root histograms computed
    // together where that is cheaper (rootsTogether), else their roots' counts shared
    const together = K > 1 && (useSym || !params.grower.symmetric) && (useSym ? (symGrower as TreeGrower) : grower).rootsTogether(grad, hess, n, K, rows, m, mask);
    for (let k = 0; k < K; k++) {
      const g = K === 1 ? grad : grad.subarray(k * n, (k + 1) * n);
      const h = K === 1 ? hess : hess.subarray(k * n, (k + 1) * n);
      const counts: RootCounts = K === 1 || together ? 'none' : k === 0 ? 'keep' : 'reuse';
      const given = together ? k : -1;
      const tree = useSym
        ? (symGrower as TreeGrower).growSymmetricFast(g, h, rows, m, mask, counts, given)
        : params.grower.symmetric ? grower.growSymmetric(g, h, rows, m, mask) : grower.grow(g, h, rows, m, mask, counts, given);
      const lr = useSym ? params.learningRate * (params.grower.symmetricHybridLrScale ?? 1) : params.learningRate;
      for (let l = 0; l < tree.leafValue.length; l++) tree.leafValue[l] *= lr;
      trees.push(tree);
      const lv = tree.leafValue;
      // symmetric trees: leaves from their levels' splits directly (routeSymmetric)
      if (nOut > 0 && useSym) router.routeSymmetric(tree, info, grower.cols, n, outside, nOut, outsideLeaf);
      else if (nOut > 0) router.route(tree, info, grower.cols, n, outside, nOut, outsideLeaf);
      // the sample's rows from the grower's leaves, the others from the router: one addition per row
      (useSym ? (symGrower as TreeGrower) : grower).addLeafValues(raw, 1, k * n, lv);
      for (let j = 0; j < nOut; j++) {
        const i = outside[j];
        raw[k * n + i] += lv[outsideLeaf[i]];
      }
      if (nv > 0) {
        if (useSym) router.routeSymmetric(tree, info, this.validCols, nv, null, nv, validLeaf);
        else router.route(tree, info, this.validCols, nv, null, nv, validLeaf);
        const off = k * nv;
        for (let i = 0; i < nv; i++) vraw[off + i] += lv[validLeaf[i]];
      }
    }
    this.rounds.push(trees);
    this.exhausted = trees.every((t) => t.feature.length === 0);
    const vl = this.valid
      ? params.stopMetric === 'calibrated' && loss.name === 'log_loss' ? calibratedLogLoss(this.valid.y, vraw, this.calib) : loss.lossClassMajor(this.valid.y, vraw)
      : null;
    if (vl !== null) this.validHistory.push(vl);
    if (params.keepValidPath && nv > 0) this.validPath.push(vraw.slice());
    return vl;
  }

  /** The current round is the one early stopping would keep: its validation scores are kept. */
  markBest(): void {
    this.bestVraw.set(this.vraw);
    this.bestVrawIteration = this.rounds.length;
  }

  /** The model of the first `kept` rounds (-1: every round grown), with its validation scores. */
  finish(keptIn: number): BoostResult {
    const { K, nv, info, F, valid, vraw, rounds, init } = this;
    let kept = keptIn < 0 ? rounds.length : keptIn;
    if (kept === 0) kept = Math.min(1, rounds.length);
    // rebuild the validation scores for the kept rounds
    if (valid && kept < rounds.length && kept === this.bestVrawIteration) {
      vraw.set(this.bestVraw);
    } else if (valid && kept < rounds.length) {
      for (let k = 0; k < K; k++) vraw.fill(init[k], k * nv, (k + 1) * nv);
      if (K === 1 && this.params.validOffset !== undefined) vraw.set(this.params.validOffset);
      for (let r = 0; r < kept; r++) {
        for (let k = 0; k < K; k++) {
          const tree = rounds[r][k];
          const router = routerOf(tree, info);
          for (let i = 0; i < nv; i++) vraw[k * nv + i] += tree.leafValue[leafOfRouted(router, valid.bins, i * F)];
        }
      }
    }
    const builder = new PredictorBuilder(F, K);
    for (let r = 0; r < kept; r++) {
      for (let k = 0; k < K; k++) builder.addTree(rounds[r][k], info, k, 1);
    }
    return {
      predictor: builder.build(init),
      rounds: kept,
      validHistory: this.validHistory,
      validRaw: valid ? rowMajor(vraw, nv, K) : null,
      ...(this.params.keepValidPath ? { validPath: this.validPath } : {}),
    };
  }
}

export function boost(
  train: BinnedSet,
  valid: BinnedSet | null,
  info: BinnedFeatureInfo,
  F: number,
  loss: Loss,
  params: BoostParams,
  callbacks: TrainingCallback[] = [],
): BoostResult {
  const booster = new Booster(train, valid, info, F, loss, params);
  let kept = -1;
  for (let it = 1; it <= params.maxRounds; it++) {
    const vl = booster.step();
    const state: TrainingState = Object.freeze({ iteration: it, maxRounds: params.maxRounds, trainLoss: null, validLoss: vl });
    let stop = false;
    for (const cb of callbacks) {
      const r = cb(state);
      if (r && 'stop' in r) {
        stop = true;
        kept = r.bestIteration;
      } else if (r && 'best' in r) booster.markBest();
    }
    if (stop) break;
    // no split anywhere: nothing more to learn
    if (booster.exhausted) {
      kept = it;
      break;
    }
  }
  return booster.finish(kept);
}

/**
 * Mean binary log loss of the logits `z` after the affine recalibration sigmoid(a z + b) that minimises
 * it (a few Newton steps on (a, b) from `ab`, which is updated: the previous round's pair is a close
 * start). The part of the log loss that recalibration cannot remove measures how well the scores
 * separate the classes, as ROC AUC does, but smoothly.
 */
export function calibratedLogLoss(y: Float64Array, z: Float64Array, ab: Float64Array, steps = 4): number {
  const n = y.length;
  if (n === 0) return 0;
  const lossAt = (a: number, b: number): number => {
    let s = 0;
    for (let i = 0; i < n; i++) {
      const t = a * z[i] + b;
      s += softplus(t) - y[i] * t;
    }
    return s / n;
  };
  let a = ab[0];
  let b = ab[1];
  let cur = lossAt(a, b);
  for (let it = 0; it < steps; it++) {
    let ga = 0, gb = 0, haa = 0, hab = 0, hbb = 0;
    for (let i = 0; i < n; i++) {
      const t = a * z[i] + b;
      const p = t >= 0 ? 1 / (1 + Math.exp(-t)) : Math.exp(t) / (1 + Math.exp(t));
      const r = p - y[i];
      const w = Math.max(p * (1 - p), 1e-12);
      ga += r * z[i];
      gb += r;
      haa += w * z[i] * z[i];
      hab += w * z[i];
      hbb += w;
    }
    haa += 1e-9 * n;
    hbb += 1e-9 * n;
    const det = haa * hbb - hab * hab;
    if (!(det > 0)) break;
    const da = (hbb * ga - hab * gb) / det;
    const db = (haa * gb - hab * ga) / det;
    let step = 1;
    let next = cur;
    let na = a;
    let nb = b;
    for (let half = 0; half < 10; half++) {
      na = a - step * da;
      nb = b - step * db;
      next = lossAt(na, nb);
      if (next <= cur) break;
      step /= 2;
    }
    if (!(next <= cur)) break;
    const done = cur - next < 1e-12;
    a = na;
    b = nb;
    cur = next;
    if (done) break;
  }
  ab[0] = a;
  ab[1] = b;
  return cur;
}
