/**
 * Training core on an encoded matrix: binning, internal stratified folds, one boosted model per
 * fold (early-stopped on the fold's held-out rows), and the average of the fold models
 * ("cross-fit bagging"). The out-of-fold scores give an honest validation score for free.
 */
import type { KnnOptions } from './knn';
import { fitBins, transformBins, type BinnedFeatureInfo } from './binning';
import { boost, earlyStoppingCallback, Booster, type BinnedSet, type BoostParams, type BoostResult, type TrainingCallback } from './gbdt';
import { DEFAULT_GROWER_PARAMS, type GrowerParams } from './grower';
import { makeLoss, softmaxRow, sigmoid, type Loss, type LossName } from './loss';
import { mergePredictors, predictRaw, type FlatPredictor } from './predictor';
import { Prng } from './prng';
import type { MemberName } from './portfolio';
import type { LinearOptions } from './linear';
import type { ForestOptions } from './forest';
import type { CategoryRule } from './schema';
import type { GroupOptions } from './group';

export type InternalTask = 'binary' | 'multiclass' | 'regression';

export interface EngineConfig {
  learningRate: number;
  maxRounds: number;
  earlyStoppingRounds: number;
  /** early stopping: smallest improvement of the validation loss that counts, relative to the initial loss */
  earlyStoppingMinDelta: number;
  /**
   * experiments (twenty-sixth round of issue 15; no engine version sets it): early stopping's patience as
   * this share of the best round so far (rounded up), at least earlyStoppingMin rounds (default:
   * 1 / learningRate rounds, one unit of learning rate × rounds) and at most earlyStoppingRounds, in every
   * fold model and in pooled stopping. Absent: earlyStoppingRounds, as every engine version trains.
   */
  earlyStoppingShare?: number;
  earlyStoppingMin?: number;
  /**
   * early stopping of a cross-fit's fold models: 'fold' (each on its own held-out rows, engines 1-11)
   * or 'pooled' (together, on the loss of all held-out rows: boostPooled)
   */
  stopping?: 'fold' | 'pooled';
  /** number of internal folds; one model per fold, averaged. 1 = a single model with a holdout */
  folds: number;
  /** fraction held out for early stopping when folds = 1 */
  holdoutFraction: number;
  /** number of fold models actually trained (<= folds); the others are skipped */
  models: number;
  /** cross-fit repetitions with different fold splits and seeds (all models averaged) */
  repeats: number;
  subsample: number;
  colsample: number;
  maxBins: number;
  loss: LossName | 'auto';
  /**
   * experiments: honest out-of-fold scores (one output, each fold model stopped on its own fold): a
   * fold model stops at the round of least loss on its held-out rows, so its scores of those rows are
   * those of a round chosen on them. With this, each half of a fold's held-out rows gets the model's
   * scores at the round early stopping would keep on the other half (honestOofScores); the fold models
   * themselves are unchanged, only the out-of-fold scores that weigh the other members and give the
   * validation score.
   */
  honestOof?: boolean;
  /** experiments: what early stopping watches on binary tasks (BoostParams.stopMetric; default the log loss) */
  stopMetric?: 'loss' | 'calibrated';
  /**
   * experiments: a model refitted on all rows after the cross-fit (folds > 1), grown for the fold
   * models' mean kept rounds times `refitRounds` (default 1) with no early stopping, and averaged into
   * the predictor with this weight (the fold models share the rest equally). The out-of-fold scores
   * are the fold models' as without it.
   */
  refit?: number;
  refitRounds?: number;
  /**
   * experiments (twenty-first round): each fold model of the cross-fit an average of this many boosted
   * models on the same rows, each with its own bagging and feature-sampling seed (the first one's seed
   * that of a fold model without it) and its own early stopping; the fold's out-of-fold scores are
   * their mean. Absent or 1: one model per fold. Not with 'pooled' stopping or honestOof.
   */
  bags?: number;
  grower: GrowerParams;
}

/** Partial configuration, as accepted by the public options. */
export type EngineConfigOverride = Partial<Omit<EngineConfig, 'grower'>> & {
  grower?: Partial<GrowerParams>;
  /** engine 2 only: the portfolio's members (default: all of them) */
  members?: MemberName[];
  /** engine 2 only (experiments): greedy blend from the best member alone or from every member once */
  blendStart?: 'best' | 'all';
  /** engine 6 only (experiments): options of the linear member (linear.ts) */
  linear?: Partial<LinearOptions>;
  /** engines 8 and 9 only (experiments): options of the forest member (forest.ts), over the version's */
  forest?: Partial<ForestOptions>;
  /** engines 1-10 (experiments): the category rule over the version's (schema.ts, categoryRuleFor) */
  categories?: Partial<CategoryRule>;
  /** engines 11-14 (experiments): options of the group member (group.ts), over the version's */
  group?: Partial<GroupOptions>;
  /** experiments (nineteenth round): options of the k-nearest-neighbours member (knn.ts); present turns it on */
  knn?: Partial<KnnOptions>;
};

/**
 * Size-dependent defaults, chosen on the benchmark (bench/RESULTS.md): learning rate 0.1
 * with early stopping (20 rounds without an improvement of 1e-4 x the first round's loss);
 * cross-fit ensembles of 5 models up to 8,000 row-outputs (rows x classes for multiclass), of 3
 * models up to 40,000, and above that a single model early-stopped on a 15% holdout. Binary
 * classification samples half of the features per round (better AUC there, worse elsewhere).
 */
export function defaultConfig(n: number, task: InternalTask, nClasses: number): EngineConfig {
  const minData = Math.max(3, Math.min(20, Math.floor(n / 40)));
  const work = task === 'multiclass' ? n * nClasses : n;
  const folds = work > 40000 ? 1 : work > 8000 ? 3 : 5;
  return {
    learningRate: 0.1,
    maxRounds: 1000,
    earlyStoppingRounds: 20,
    earlyStoppingMinDelta: 1e-4,
    folds,
    holdoutFraction: 0.15,
    models: folds,
    repeats: 1,
    subsample: 0.8,
    colsample: task === 'binary' ? 0.5 : 0.8,
    maxBins: 255,
    loss: 'auto',
    grower: { ...DEFAULT_GROWER_PARAMS, minDataInLeaf: minData, lambdaL2: 1, minDataPerGroup: Math.max(2, Math.min(10, minData)) },
  };
}

/** EngineConfig.earlyStoppingShare as earlyStoppingCallback's argument. */
function shareOf(cfg: EngineConfig): { share: number; min: number } | undefined {
  return cfg.earlyStoppingShare !== undefined ? { share: cfg.earlyStoppingShare, min: cfg.earlyStoppingMin ?? Math.ceil(1 / cfg.learningRate - 1e-9) } : undefined;
}

/** Fold id per row; stratified by class (round-robin over a shuffled order) when `classes` > 0. */
export function makeFolds(y: ArrayLike<number>, nFolds: number, seed: number, classes: number): Int32Array {
  const n = y.length;
  const rng = new Prng(seed);
  const fold = new Int32Array(n);
  const perm = rng.shuffle(Int32Array.from({ length: n }, (_, i) => i));
  if (classes > 0) {
    // group the shuffled rows by class, then deal them out in turn so each fold gets its share
    const order = Array.from(perm).sort((a, b) => y[a] - y[b] || 0);
    // stable sort keeps the shuffled order within a class
    const offset = rng.nextInt(nFolds);
    order.forEach((row, j) => {
      fold[row] = (j + offset) % nFolds;
    });
  } else {
    perm.forEach((row, j) => {
      fold[row] = j % nFolds;
    });
  }
  return fold;
}

export interface CoreInput {
  X: Float64Array;
  n: number;
  F: number;
  /** per feature: 0 for numeric, number of categories for categorical */
  categorical: ArrayLike<number>;
  y: Float64Array;
  task: InternalTask;
  nClasses: number;
}

export interface FoldModel {
  predictor: FlatPredictor;
  validRows: Int32Array;
  rounds: number;
}

export interface CoreResult {
  predictor: FlatPredictor;
  /** out-of-fold raw scores (n x K); NaN where a row was not held out by any trained model */
  oofRaw: Float64Array;
  foldModels: FoldModel[];
  info: BinnedFeatureInfo;
  lossName: LossName;
}

export function lossFor(task: InternalTask, cfg: EngineConfig): LossName {
  if (cfg.loss !== 'auto') return cfg.loss;
  return task === 'binary' ? 'log_loss' : task === 'multiclass' ? 'softmax' : 'squared_error';
}

/** The rows `rows` of a row-major matrix of `width` columns, in that order, as a new matrix. */
export function takeRows<T extends Float64Array | Uint8Array>(matrix: T, width: number, rows: ArrayLike<number>): T {
  const out = new (matrix.constructor as new (length: number) => T)(rows.length * width);
  for (let j = 0; j < rows.length; j++) out.set(matrix.subarray(rows[j] * width, rows[j] * width + width), j * width);
  return out;
}

/** One fold of the cross-fit: its training and held-out rows, its loss and its boosting parameters. */
export interface FoldSet {
  train: BinnedSet;
  valid: BinnedSet | null;
  validRows: Int32Array;
  loss: Loss;
  params: BoostParams;
}

/**
 * The fold models grown in step and stopped together (EngineConfig.stopping 'pooled'): after each
 * round, the loss of every held-out row under its fold's model (the cross-validated loss, the folds'
 * losses weighted by their rows) decides, with the usual patience and smallest improvement, the one
 * round every fold model keeps. One fold's held-out loss is noisy and stops its model at a chance
 * minimum; the pooled loss of all of them is several times steadier.
 */
export function boostPooled(folds: FoldSet[], info: BinnedFeatureInfo, F: number, cfg: EngineConfig, onRound?: (done: number) => void): BoostResult[] {
  const boosters = folds.map((fs) => new Booster(fs.train, fs.valid, info, F, fs.loss, fs.params));
  const held = folds.reduce((s, fs) => s + (fs.valid as BinnedSet).n, 0);
  const stopping = earlyStoppingCallback(cfg.earlyStoppingRounds, cfg.earlyStoppingMinDelta, true, shareOf(cfg));
  let kept = -1;
  for (let it = 1; it <= cfg.maxRounds; it++) {
    let pooled = 0;
    boosters.forEach((b, m) => (pooled += (b.step() as number) * (folds[m].valid as BinnedSet).n));
    const r = stopping(Object.freeze({ iteration: it, maxRounds: cfg.maxRounds, trainLoss: null, validLoss: pooled / held }));
    if (onRound && it % 10 === 0) onRound(it);
    if (r && 'stop' in r) {
      kept = r.bestIteration;
      break;
    }
    if (r && 'best' in r) boosters.forEach((b) => b.markBest());
    // no split anywhere in any fold: nothing more to learn
    if (boosters.every((b) => b.exhausted)) {
      kept = it;
      break;
    }
  }
  return boosters.map((b) => b.finish(kept));
}

/**
 * Boosting from an offset (experiments, one output): given the held-out rows of every fold model of
 * the first cross-fit, the starting raw score of every row for each fold model (n each), or null to
 * boost from the loss's constant start as usual.
 */
export type FoldOffsets = (validRows: Int32Array[]) => Float64Array[] | null;

export function fitCore(
  input: CoreInput,
  cfg: EngineConfig,
  seed: number,
  onRound?: (done: number, total: number) => void,
  offsets?: FoldOffsets,
): CoreResult {
  const { X, n, F, y, task } = input;
  const info = fitBins(X, n, F, input.categorical, cfg.maxBins, n < 100 ? 1 : 3);
  const bins = transformBins(info, X, n, F);
  const lossName = lossFor(task, cfg);
  const K = task === 'multiclass' ? input.nClasses : 1;
  const classes = task === 'regression' ? 0 : input.nClasses;
  const rng = new Prng(seed);
  const repeats = Math.max(1, Math.floor(cfg.repeats ?? 1));
  const nModels = cfg.folds <= 1 ? 1 : Math.max(1, Math.min(cfg.models, cfg.folds));
  const oofSum = new Float64Array(n * K);
  const oofCount = new Int32Array(n);
  const foldModels: FoldModel[] = [];
  const totalRounds = repeats * nModels * cfg.maxRounds;
  for (let rep = 0; rep < repeats; rep++) {
    const foldSeed = rng.fork(1 + rep);
    const foldOf = cfg.folds <= 1
      ? makeFolds(y, Math.max(2, Math.round(1 / cfg.holdoutFraction)), foldSeed, classes)
      : makeFolds(y, cfg.folds, foldSeed, classes);
    const folds: FoldSet[] = [];
    for (let m = 0; m < nModels; m++) {
      const trainIdx: number[] = [];
      const validIdx: number[] = [];
      for (let i = 0; i < n; i++) (foldOf[i] === m ? validIdx : trainIdx).push(i);
      const tr = Int32Array.from(trainIdx);
      const va = Int32Array.from(validIdx);
      const ytr = Float64Array.from(tr, (i) => y[i]);
      const yva = Float64Array.from(va, (i) => y[i]);
      folds.push({
        train: { bins: takeRows(bins, F, tr), n: tr.length, y: ytr },
        valid: va.length > 0 ? { bins: takeRows(bins, F, va), n: va.length, y: yva } : null,
        validRows: va,
        loss: makeLoss(lossName, input.nClasses, ytr),
        params: {
          grower: cfg.grower,
          learningRate: cfg.learningRate,
          maxRounds: cfg.maxRounds,
          subsample: cfg.subsample,
          colsample: cfg.colsample,
          seed: rng.fork(100 + rep * 31 + m),
          ...(cfg.stopMetric ? { stopMetric: cfg.stopMetric } : {}),
          ...(cfg.honestOof && K === 1 && cfg.stopping !== 'pooled' ? { keepValidPath: true } : {}),
        },
      });
    }
    const off = offsets && rep === 0 && K === 1 && folds.length === cfg.folds && folds.every((f) => f.valid !== null)
      ? offsets(folds.map((f) => f.validRows))
      : null;
    if (off) {
      folds.forEach((fs, m) => {
        const inVa = new Uint8Array(n);
        for (const r of fs.validRows) inVa[r] = 1;
        const tr: number[] = [];
        for (let i = 0; i < n; i++) if (!inVa[i]) tr.push(i);
        fs.params = { ...fs.params, trainOffset: Float64Array.from(tr, (i) => off[m][i]), validOffset: Float64Array.from(fs.validRows, (i) => off[m][i]) };
      });
    }
    const base = rep * nModels * cfg.maxRounds;
    const results = cfg.stopping === 'pooled' && folds.length > 1 && folds.every((f) => f.valid !== null)
      ? boostPooled(folds, info, F, cfg, onRound && ((done) => onRound(base + done * nModels, totalRounds)))
      : folds.map((fs, m) => {
          const callbacks = (): TrainingCallback[] => {
            const c: TrainingCallback[] = [earlyStoppingCallback(cfg.earlyStoppingRounds, cfg.earlyStoppingMinDelta, true, shareOf(cfg))];
            if (onRound) {
              const start = base + m * cfg.maxRounds;
              c.push((s) => {
                if (s.iteration % 10 === 0) onRound(start + s.iteration, totalRounds);
              });
            }
            return c;
          };
          const bags = Math.max(1, Math.floor(cfg.bags ?? 1));
          if (bags === 1 || fs.params.keepValidPath) return boost(fs.train, fs.valid, info, F, fs.loss, fs.params, callbacks());
          return bagged(fs, info, F, bags, callbacks);
        });
    results.forEach((res, m) => {
      const va = folds[m].validRows;
      if (res.validRaw && res.validPath && res.validPath.length > 0) {
        const honest = honestOofScores(res.validPath, (folds[m].valid as BinnedSet).y, folds[m].loss, cfg, res.rounds);
        for (let j = 0; j < va.length; j++) {
          oofCount[va[j]]++;
          oofSum[va[j]] += honest[j];
        }
      } else if (res.validRaw) {
        for (let j = 0; j < va.length; j++) {
          oofCount[va[j]]++;
          for (let k = 0; k < K; k++) oofSum[va[j] * K + k] += res.validRaw[j * K + k];
        }
      }
      foldModels.push({ predictor: res.predictor, validRows: va, rounds: res.rounds });
    });
  }
  const oofRaw = new Float64Array(n * K).fill(NaN);
  for (let i = 0; i < n; i++) {
    if (oofCount[i] > 0) for (let k = 0; k < K; k++) oofRaw[i * K + k] = oofSum[i * K + k] / oofCount[i];
  }
  if (onRound) onRound(totalRounds, totalRounds);
  const refitWeight = cfg.refit !== undefined && cfg.refit > 0 && cfg.folds > 1 && !offsets ? Math.min(1, cfg.refit) : 0;
  if (refitWeight > 0) {
    // experiments (EngineConfig.refit): one more model on all rows, for the fold models' mean rounds
    let meanRounds = 0;
    for (const f of foldModels) meanRounds += f.rounds / foldModels.length;
    const R = Math.max(1, Math.round(meanRounds * (cfg.refitRounds ?? 1)));
    const all = boost({ bins, n, y }, null, info, F, makeLoss(lossName, input.nClasses, y), {
      grower: cfg.grower,
      learningRate: cfg.learningRate,
      maxRounds: R,
      subsample: cfg.subsample,
      colsample: cfg.colsample,
      seed: rng.fork(7919),
    });
    const wf = (1 - refitWeight) / foldModels.length;
    const predictor = mergePredictors([...foldModels.map((f) => f.predictor), all.predictor], [...foldModels.map(() => wf), refitWeight]);
    return { predictor, oofRaw, foldModels, info, lossName };
  }
  const w = 1 / foldModels.length;
  const predictor = mergePredictors(
    foldModels.map((f) => f.predictor),
    foldModels.map(() => w),
  );
  return { predictor, oofRaw, foldModels, info, lossName };
}

/**
 * EngineConfig.bags: `bags` models boosted on one fold's rows, the first with the fold's seed, the
 * others with seeds derived from it (no draw from the cross-fit's generator, so the other fold models
 * keep theirs), each early-stopped on the fold's held-out rows; one result whose predictor is their
 * average (mergePredictors), its held-out scores their mean and its rounds their mean.
 */
function bagged(fs: FoldSet, info: BinnedFeatureInfo, F: number, bags: number, callbacks: () => TrainingCallback[]): BoostResult {
  const results: BoostResult[] = [];
  for (let b = 0; b < bags; b++) {
    const seed = b === 0 ? fs.params.seed : (fs.params.seed ^ Math.imul(b + 1, 0x9e3779b1)) >>> 0;
    results.push(boost(fs.train, fs.valid, info, F, fs.loss, { ...fs.params, seed }, callbacks()));
  }
  const w = 1 / bags;
  const predictor = mergePredictors(results.map((r) => r.predictor), results.map(() => w));
  let validRaw: Float64Array | undefined;
  if (results.every((r) => r.validRaw)) {
    validRaw = new Float64Array((results[0].validRaw as Float64Array).length);
    for (const r of results) {
      const v = r.validRaw as Float64Array;
      for (let j = 0; j < v.length; j++) validRaw[j] += v[j] / bags;
    }
  }
  let rounds = 0;
  for (const r of results) rounds += r.rounds / bags;
  return { ...results[0], predictor, ...(validRaw ? { validRaw } : {}), rounds: Math.round(rounds) };
}

/**
 * Out-of-fold scores of one fold model (one output) whose rounds were not chosen on the rows they
 * score: the held-out rows are dealt into two halves (alternately, in row order), and each half gets
 * the model's scores at the round early stopping (cfg's patience and smallest improvement) keeps on
 * the other half's loss, among the rounds grown. `path[r]` holds the held-out rows' raw scores after
 * round r + 1. With fewer than 4 held-out rows, the scores of the kept round `kept`.
 */
export function honestOofScores(path: Float64Array[], y: Float64Array, loss: Loss, cfg: EngineConfig, kept: number): Float64Array {
  const nv = y.length;
  const R = path.length;
  const out = new Float64Array(nv);
  if (nv < 4) {
    out.set(path[Math.max(0, Math.min(R, kept) - 1)]);
    return out;
  }
  for (let h = 0; h < 2; h++) {
    // the other half's rows
    const other: number[] = [];
    for (let j = 0; j < nv; j++) if (j % 2 !== h) other.push(j);
    const yo = Float64Array.from(other, (j) => y[j]);
    const ro = new Float64Array(other.length);
    const stop = earlyStoppingCallback(cfg.earlyStoppingRounds, cfg.earlyStoppingMinDelta, true, shareOf(cfg));
    let best = R;
    for (let r = 0; r < R; r++) {
      const p = path[r];
      for (let q = 0; q < other.length; q++) ro[q] = p[other[q]];
      const res = stop(Object.freeze({ iteration: r + 1, maxRounds: R, trainLoss: null, validLoss: loss.loss(yo, ro) }));
      if (res && 'stop' in res) {
        best = res.bestIteration;
        break;
      }
    }
    const p = path[Math.max(0, Math.min(R, best) - 1)];
    for (let j = h; j < nv; j += 2) out[j] = p[j];
  }
  return out;
}

/** Converts raw scores to outputs: class probabilities (n x C) or regression values (n). */
export function rawToOutput(task: InternalTask, raw: Float64Array, n: number, nClasses: number): Float64Array {
  if (task === 'regression') return raw.slice(0, n);
  if (task === 'binary') {
    const out = new Float64Array(n * 2);
    for (let i = 0; i < n; i++) {
      const p = sigmoid(raw[i]);
      out[i * 2] = 1 - p;
      out[i * 2 + 1] = p;
    }
    return out;
  }
  const out = new Float64Array(n * nClasses);
  for (let i = 0; i < n; i++) softmaxRow(raw, i * nClasses, nClasses, out, i * nClasses);
  return out;
}

export function predictOutput(p: FlatPredictor, task: InternalTask, X: Float64Array, n: number, nClasses: number): Float64Array {
  return rawToOutput(task, predictRaw(p, X, n), n, nClasses);
}
