/**
 * Engine 8's forest member: extremely randomised trees (Geurts, Ernst & Wehenkel 2006), grown to
 * purity on the encoded matrix and averaged. Its errors differ from the boosted trees' (random cut
 * points, no shrinkage, every tree on all rows), which is what pays on small data where boosting
 * overfits its early-stopping folds: glass, auto_mpg, california_schools (bench/RESULTS.md, engine 8.0.0).
 *
 * - A node draws candidate features in random order and cuts each non-constant one at a uniform point
 *   between its smallest and largest value in the node; the cut with the largest impurity decrease wins
 *   (Gini for classes, variance for values). `mtry` candidates: sqrt(F) for classes, F/2 for values.
 * - Categorical codes are cut as numbers. A missing value (NaN) fails every `x <= cut` test and so
 *   always goes right, in training and in prediction alike.
 * - Leaves hold class frequencies (classification) or the mean (regression); the forest's output is
 *   their average: probabilities n x K (binary K = 2) or values n, as `rawToOutput` gives them.
 * - Engine 16 above 15.0.0's budget: each tree on a random subsample of rows (ForestOptions.treeWork)
 *   and the forest weighed by its out-of-bag outputs (outOfBagOutputs) instead of fold forests.
 */
import { kernelPays, predictForestWasm } from './forest-wasm';
import { rocAuc } from './metrics';
import { Prng } from './prng';
import type { InternalTask } from './train';

export interface ForestOptions {
  /** trees of the forest the model keeps (grown on all rows) */
  trees: number;
  /** trees of each fold's forest, grown only to estimate the weight out of fold */
  foldTrees: number;
  /** fitted only on data of at most this many rows (trees grown to purity have about 2n nodes each) */
  maxRows: number;
  /** what the mixture weight minimises on binary tasks: log loss, or 1 - ROC AUC (the binary validation metric) */
  binaryWeightBy: 'log_loss' | 'roc_auc';
  /** experiments: a node of fewer rows than this is a leaf (unset: 2, trees grown to purity) */
  minSplit?: number;
  /**
   * Each tree grown on a random subsample (without replacement) of at most floor(treeWork / mtry) of
   * the forest's rows, mtry the candidate features per node: the work of one level of one tree bounded.
   * Unset, or at least rows × mtry: every tree on all rows (and the same trees as without it).
   */
  treeWork?: number;
  /**
   * Engine 16 (with treeWork): no fold forests; the weight is fitted on the kept forest's out-of-bag
   * outputs (each row scored by the trees whose subsample left it out), each tree on at most half the
   * rows (addForestMember).
   */
  outOfBag?: boolean;
  /**
   * A fitted weight below this drops the member (the model's outputs alone, as a weight of 0): a forest
   * at a small weight buys little and its trees cost prediction time and artefact size. Unset: any
   * positive weight keeps it.
   */
  minWeight?: number;
  /**
   * Experiments: a mixture that lowers the weight's out-of-fold loss (1 - ROC AUC when the weight is
   * fitted by AUC, else the log loss or squared error) by less than this drops the member.
   */
  minGain?: number;
}

/** The engine versions with a forest member. */
export type ForestVersion = '8.0.0' | '9.0.0';

/** Engine 8.0.0's forest. */
export const DEFAULT_FOREST_OPTIONS: ForestOptions = { trees: 60, foldTrees: 30, maxRows: 500, binaryWeightBy: 'log_loss' };

/**
 * The forest of an engine version for a task. 9.0.0 differs from 8.0.0 on classification only:
 * - its fold forests have as many trees as the forest the model keeps. A tree grown to purity votes
 *   one class, so a forest's probabilities come in steps of 1/trees: a forest half the size ranks rows
 *   worse and puts more rows at 0, and its out-of-fold score undervalues the kept forest (sonar's fold
 *   forests: AUC 0.927 with 30 trees, 0.947 with 100). Leaves of a regression forest hold means, so
 *   their fold forests keep 30 trees (with 60, worse on 9 and better on 6 of 18 set-seed pairs,
 *   bench/RESULTS.md).
 * - on binary tasks the weight maximises the out-of-fold ROC AUC, the metric binary models are
 *   validated and judged by, rather than the log loss.
 */
export function forestOptions(version: ForestVersion, task: InternalTask): ForestOptions {
  if (version === '8.0.0' || task === 'regression') return { ...DEFAULT_FOREST_OPTIONS };
  return { ...DEFAULT_FOREST_OPTIONS, foldTrees: DEFAULT_FOREST_OPTIONS.trees, binaryWeightBy: 'roc_auc' };
}

/** A forest as flat arrays; node i is a leaf when feature[i] < 0, its values at leafValue[left[i] * K]. */
export interface Forest {
  nOutputs: number;
  treeRoot: Int32Array;
  feature: Int32Array;
  threshold: Float64Array;
  left: Int32Array;
  right: Int32Array;
  leafValue: Float64Array;
}

/** Growable typed arrays for the nodes while a forest is grown. */
class NodeBuffer {
  feature = new Int32Array(1024);
  threshold = new Float64Array(1024);
  left = new Int32Array(1024);
  right = new Int32Array(1024);
  leafValue = new Float64Array(1024);
  nodes = 0;
  leaves = 0;

  constructor(readonly K: number) {}

  node(): number {
    if (this.nodes === this.feature.length) {
      const grow = <T extends Int32Array | Float64Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.feature = grow(this.feature);
      this.threshold = grow(this.threshold);
      this.left = grow(this.left);
      this.right = grow(this.right);
    }
    return this.nodes++;
  }

  leaf(node: number, values: Float64Array): void {
    if ((this.leaves + 1) * this.K > this.leafValue.length) {
      const b = new Float64Array(this.leafValue.length * 2);
      b.set(this.leafValue);
      this.leafValue = b;
    }
    this.feature[node] = -1;
    this.left[node] = this.leaves;
    this.leafValue.set(values, this.leaves * this.K);
    this.leaves++;
  }
}

/** Outputs per row of the forest's leaves: K = 2 for binary, the class count for multiclass, 1 for regression. */
export function forestOutputs(task: InternalTask, nClasses: number): number {
  return task === 'regression' ? 1 : task === 'binary' ? 2 : nClasses;
}

/**
 * Grows `trees` trees on the rows `rows` of X (n x F, row-major). `y`: class index or value.
 * Deterministic for a seed.
 */
export function fitForest(
  X: Float64Array,
  F: number,
  y: Float64Array,
  task: InternalTask,
  nClasses: number,
  rows: Int32Array,
  trees: number,
  seed: number,
  minSplit = 2,
  treeWork?: number,
  bags?: Uint8Array,
): Forest {
  const K = forestOutputs(task, nClasses);
  const classify = task !== 'regression';
  const mtry = classify ? Math.max(1, Math.round(Math.sqrt(F))) : Math.max(1, Math.round(F / 2));
  const rng = new Prng(seed);
  const buf = new NodeBuffer(K);
  const treeRoot = new Int32Array(trees);
  // column-major copy of the rows used: a candidate's two passes read one feature of many rows
  const m0 = rows.length;
  const cols = Array.from({ length: F }, (_, f) => Float64Array.from(rows, (r) => X[r * F + f]));
  const yr = Float64Array.from(rows, (r) => y[r]);
  // 0 × y is ±0 only for a finite y (the branch-free sums below need it)
  const finiteY = yr.every((v) => Number.isFinite(v));
  const idx = new Int32Array(m0);
  // classification partitions' right side, before it is copied back after the left one
  const right = new Int32Array(m0);
  const all = Int32Array.from({ length: m0 }, (_, i) => i);
  const order = Int32Array.from({ length: F }, (_, f) => f);
  // rows of each tree: all, or a subsample of `sub` drawn by a partial Fisher-Yates of `perm`
  const sub = treeWork === undefined ? m0 : Math.max(2, Math.min(m0, Math.floor(treeWork / mtry)));
  const perm = sub < m0 ? Int32Array.from({ length: m0 }, (_, i) => i) : all;
  const leftCounts = new Float64Array(K);
  const totals = new Float64Array(K);
  const values = new Float64Array(K);
  // explicit stack of [node, lo, hi]
  const stack: number[] = [];

  /** Class counts (or sum and count) of idx[lo, hi) into totals. */
  const summarise = (lo: number, hi: number): boolean => {
    totals.fill(0);
    if (classify) {
      if (K === 2) {
        // two classes: the rows of class 1 summed in a register (y is 0 or 1), class 0 the rest
        let ones = 0;
        for (let j = lo; j < hi; j++) ones += yr[idx[j]];
        totals[0] = hi - lo - ones;
        totals[1] = ones;
      } else for (let j = lo; j < hi; j++) totals[yr[idx[j]]] += 1;
      let nonZero = 0;
      for (let k = 0; k < K; k++) if (totals[k] > 0) nonZero++;
      return nonZero <= 1;
    }
    const first = yr[idx[lo]];
    let pure = true;
    let sum = 0;
    for (let j = lo; j < hi; j++) {
      const v = yr[idx[j]];
      sum += v;
      if (v !== first) pure = false;
    }
    totals[0] = sum;
    return pure;
  };

  const makeLeaf = (node: number, lo: number, hi: number): void => {
    const m = hi - lo;
    for (let k = 0; k < K; k++) values[k] = totals[k] / m;
    buf.leaf(node, values);
  };

  for (let t = 0; t < trees; t++) {
    if (sub < m0) {
      for (let s = 0; s < sub; s++) {
        const r = s + rng.nextInt(m0 - s);
        const v = perm[r];
        perm[r] = perm[s];
        perm[s] = v;
      }
      idx.set(perm.subarray(0, sub));
      if (bags) for (let s = 0; s < sub; s++) bags[t * m0 + perm[s]] = 1;
    } else {
      idx.set(all);
      if (bags) bags.fill(1, t * m0, (t + 1) * m0);
    }
    const root = buf.node();
    treeRoot[t] = root;
    stack.push(root, 0, sub);
    while (stack.length > 0) {
      const hi = stack.pop() as number;
      const lo = stack.pop() as number;
      const node = stack.pop() as number;
      const m = hi - lo;
      const pure = summarise(lo, hi);
      if (m < minSplit || pure) {
        makeLeaf(node, lo, hi);
        continue;
      }
      let bestScore = -Infinity;
      let bestFeature = -1;
      let bestCut = 0;
      let tried = 0;
      for (let s = 0; s < F && tried < mtry; s++) {
        // partial Fisher-Yates: the next candidate feature in random order
        const r = s + rng.nextInt(F - s);
        const f = order[r];
        order[r] = order[s];
        order[s] = f;
        const col = cols[f];
        let lowest = Infinity;
        let highest = -Infinity;
        let missing = 0;
        for (let j = lo; j < hi; j++) {
          const v = col[idx[j]];
          if (v !== v) missing++;
          else {
            if (v < lowest) lowest = v;
            if (v > highest) highest = v;
          }
        }
        if (lowest === Infinity || (lowest === highest && missing === 0)) continue;
        tried++;
        // a cut strictly below the largest value, so that both sides hold rows; values against missing when all equal
        let cut = lowest + rng.nextFloat() * (highest - lowest);
        if (!(cut < highest)) cut = lowest;
        let score: number;
        if (classify) {
          let nLeft = 0;
          // branch-free (a random cut makes the side a coin toss for the branch predictor): every row
          // adds 1 or 0 to its class's count, and adding 0 leaves a count as it was
          if (K === 2) {
            // two classes: the left rows of class 1 counted in a register (y is 0 or 1), those of
            // class 0 the rest; the same whole numbers as counting each class
            let ones = 0;
            for (let j = lo; j < hi; j++) {
              const i = idx[j];
              const l = +(col[i] <= cut);
              ones += l * yr[i];
              nLeft += l;
            }
            leftCounts[0] = nLeft - ones;
            leftCounts[1] = ones;
          } else {
            leftCounts.fill(0);
            for (let j = lo; j < hi; j++) {
              const i = idx[j];
              const l = +(col[i] <= cut);
              leftCounts[yr[i]] += l;
              nLeft += l;
            }
          }
          const nRight = m - nLeft;
          if (nLeft === 0 || nRight === 0) continue;
          let sl = 0;
          let sr = 0;
          for (let k = 0; k < K; k++) {
            const l = leftCounts[k];
            const rr = totals[k] - l;
            sl += l * l;
            sr += rr * rr;
          }
          score = sl / nLeft + sr / nRight;
        } else {
          let sumLeft = 0;
          let nLeft = 0;
          if (finiteY) {
            // branch-free as above: a right row adds l * y = ±0, and x + (±0) is x bit for bit (the sum
            // starts at +0 and is never -0), so the sum is that of the left rows in the same order
            for (let j = lo; j < hi; j++) {
              const i = idx[j];
              const l = +(col[i] <= cut);
              sumLeft += l * yr[i];
              nLeft += l;
            }
          } else {
            for (let j = lo; j < hi; j++) {
              const i = idx[j];
              if (col[i] <= cut) {
                sumLeft += yr[i];
                nLeft++;
              }
            }
          }
          const nRight = m - nLeft;
          if (nLeft === 0 || nRight === 0) continue;
          const sumRight = totals[0] - sumLeft;
          score = (sumLeft * sumLeft) / nLeft + (sumRight * sumRight) / nRight;
        }
        if (score > bestScore) {
          bestScore = score;
          bestFeature = f;
          bestCut = cut;
        }
      }
      if (bestFeature < 0) {
        makeLeaf(node, lo, hi);
        continue;
      }
      // partition idx[lo, hi) into <= cut (left) and the rest
      const bestCol = cols[bestFeature];
      let a = lo;
      if (classify) {
        // a classification tree reads its node's rows as counts only (no sum whose rounding depends on
        // the order), so its rows may be in any order: a stable partition without branches (as the
        // grower's), which a random cut's coin-toss sides do not slow down, gives the same trees
        let nr = 0;
        for (let j = lo; j < hi; j++) {
          const i = idx[j];
          const l = +(bestCol[i] <= bestCut);
          idx[a] = i;
          right[nr] = i;
          a += l;
          nr += 1 - l;
        }
        idx.set(right.subarray(0, nr), a);
      } else {
        let b = hi - 1;
        while (a <= b) {
          if (bestCol[idx[a]] <= bestCut) a++;
          else {
            const tmp = idx[a];
            idx[a] = idx[b];
            idx[b] = tmp;
            b--;
          }
        }
      }
      const l = buf.node();
      const rnode = buf.node();
      buf.feature[node] = bestFeature;
      buf.threshold[node] = bestCut;
      buf.left[node] = l;
      buf.right[node] = rnode;
      stack.push(rnode, a, hi, l, lo, a);
    }
  }
  return {
    nOutputs: K,
    treeRoot,
    feature: buf.feature.slice(0, buf.nodes),
    threshold: buf.threshold.slice(0, buf.nodes),
    left: buf.left.slice(0, buf.nodes),
    right: buf.right.slice(0, buf.nodes),
    leafValue: buf.leafValue.slice(0, buf.leaves * K),
  };
}

/**
 * Rows scored together, tree by tree: a tree grown to purity holds a thousand nodes or more, and
 * walking every tree for one row before the next row went to memory at nearly every step; a block of
 * rows walks one tree while its nodes are in cache. Each row still adds its trees' leaves in tree
 * order, so the outputs are the same bit for bit.
 */
const ROW_BLOCK = 2048;

/**
 * The forest's average output for the n rows of X (n x F), as n x K: by the WebAssembly kernel
 * (forest-wasm.ts, the same outputs bit for bit, about 4.5 times faster) when it pays for the batch (two
 * rows or more; more when another forest must be copied in first), else by predictForestWalk.
 */
export function predictForest(forest: Forest, X: Float64Array, n: number, F: number): Float64Array {
  if (kernelPays(forest, n)) {
    const out = predictForestWasm(forest, X, n, F);
    if (out) return out;
  }
  return predictForestWalk(forest, X, n, F);
}

/** predictForest walked in JavaScript: the reference for the kernel, and the walk of small batches. */
export function predictForestWalk(forest: Forest, X: Float64Array, n: number, F: number): Float64Array {
  const K = forest.nOutputs;
  const T = forest.treeRoot.length;
  const out = new Float64Array(n * K);
  const { feature, threshold, left, right, leafValue, treeRoot } = forest;
  for (let b0 = 0; b0 < n; b0 += ROW_BLOCK) {
    const b1 = Math.min(n, b0 + ROW_BLOCK);
    for (let t = 0; t < T; t++) {
      const root = treeRoot[t];
      for (let i = b0; i < b1; i++) {
        const base = i * F;
        let node = root;
        while (feature[node] >= 0) node = X[base + feature[node]] <= threshold[node] ? left[node] : right[node];
        const v = left[node] * K;
        const o = i * K;
        for (let k = 0; k < K; k++) out[o + k] += leafValue[v + k];
      }
    }
    for (let j = b0 * K; j < b1 * K; j++) out[j] /= T;
  }
  return out;
}

/**
 * Out-of-bag outputs of a forest grown with `bags` (trees × rows.length, 1 where a tree's subsample held
 * the row): row rows[j]'s average over the trees that left it out, n x K over X's n rows; NaN for rows
 * not in `rows` and rows no tree left out. Walked in blocks of rows as predictForest is.
 */
export function outOfBagOutputs(forest: Forest, X: Float64Array, n: number, F: number, rows: Int32Array, bags: Uint8Array): Float64Array {
  const K = forest.nOutputs;
  const T = forest.treeRoot.length;
  const m = rows.length;
  const out = new Float64Array(n * K).fill(NaN);
  const acc = new Float64Array(Math.min(m, ROW_BLOCK) * K);
  const count = new Int32Array(Math.min(m, ROW_BLOCK));
  const { feature, threshold, left, right, leafValue, treeRoot } = forest;
  for (let j0 = 0; j0 < m; j0 += ROW_BLOCK) {
    const j1 = Math.min(m, j0 + ROW_BLOCK);
    acc.fill(0);
    count.fill(0);
    for (let t = 0; t < T; t++) {
      const root = treeRoot[t];
      const bag = t * m;
      for (let j = j0; j < j1; j++) {
        if (bags[bag + j]) continue;
        const base = rows[j] * F;
        let node = root;
        while (feature[node] >= 0) node = X[base + feature[node]] <= threshold[node] ? left[node] : right[node];
        const v = left[node] * K;
        const a = (j - j0) * K;
        for (let k = 0; k < K; k++) acc[a + k] += leafValue[v + k];
        count[j - j0]++;
      }
    }
    for (let j = j0; j < j1; j++) {
      const c = count[j - j0];
      if (c > 0) for (let k = 0; k < K; k++) out[rows[j] * K + k] = acc[(j - j0) * K + k] / c;
    }
  }
  return out;
}

/**
 * Mixes the forest's outputs into the model's: (1 - w) * model + w * forest, in place (probabilities
 * or values, n x K).
 */
export function mixOutputs(out: Float64Array, forest: Float64Array, weight: number): void {
  for (let j = 0; j < out.length; j++) out[j] = (1 - weight) * out[j] + weight * forest[j];
}

/** The part of a model that holds its forest member, with the member's weight in the mixture. */
export interface ForestPart extends Forest {
  weight: number;
}

const WEIGHT_STEPS = 20;

/**
 * The forest's weight in the mixture: the w in {0, 1/20, ..., 1} with the smallest loss of
 * (1 - w) * model + w * forest on the out-of-fold rows (log loss of the true class, squared error, or
 * on a binary task with `binaryWeightBy` 'roc_auc' 1 - ROC AUC), the smaller w on ties. w = 0 and w = 1 are candidates, so the mixture is never worse there than the
 * better of the two alone. Rows where either output is NaN (not held out) are skipped.
 */
export function mixWeight(
  task: InternalTask,
  y: Float64Array,
  model: Float64Array,
  forest: Float64Array,
  K: number,
  binaryWeightBy: ForestOptions['binaryWeightBy'] = 'log_loss',
): { weight: number; loss: number; zeroLoss: number } {
  if (task === 'binary' && binaryWeightBy === 'roc_auc') return aucWeight(y, model, forest);
  let best = { weight: 0, loss: Infinity };
  let zeroLoss = NaN;
  for (let s = 0; s <= WEIGHT_STEPS; s++) {
    const w = s / WEIGHT_STEPS;
    let loss = 0;
    let count = 0;
    for (let i = 0; i < y.length; i++) {
      if (Number.isNaN(model[i * K]) || Number.isNaN(forest[i * K])) continue;
      count++;
      if (task === 'regression') {
        const e = (1 - w) * model[i] + w * forest[i] - y[i];
        loss += e * e;
      } else {
        const c = i * K + y[i];
        loss -= Math.log(Math.max(1e-15, (1 - w) * model[c] + w * forest[c]));
      }
    }
    if (count > 0) loss /= count;
    if (s === 0) zeroLoss = loss;
    if (loss < best.loss) best = { weight: w, loss };
  }
  return { ...best, zeroLoss };
}

/**
 * mixWeight for a binary task judged by ROC AUC: the w whose mixture has the largest out-of-fold AUC
 * (loss = 1 - AUC), the smaller w on ties. Probabilities n x 2; rows with a NaN output are skipped.
 */
function aucWeight(y: Float64Array, model: Float64Array, forest: Float64Array): { weight: number; loss: number; zeroLoss: number } {
  const held: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(model[i * 2]) && !Number.isNaN(forest[i * 2])) held.push(i);
  const yHeld = Float64Array.from(held, (i) => y[i]);
  const mixed = new Float64Array(held.length);
  let best = { weight: 0, loss: Infinity };
  let zeroLoss = NaN;
  for (let s = 0; s <= WEIGHT_STEPS; s++) {
    const w = s / WEIGHT_STEPS;
    held.forEach((i, j) => (mixed[j] = (1 - w) * model[i * 2 + 1] + w * forest[i * 2 + 1]));
    const auc = rocAuc(yHeld, mixed);
    // AUC is undefined with one class held out: no evidence for the forest
    const loss = Number.isNaN(auc) ? Infinity : 1 - auc;
    if (s === 0) zeroLoss = loss;
    if (loss < best.loss) best = { weight: w, loss };
  }
  return best.loss === Infinity ? { weight: 0, loss: NaN, zeroLoss: NaN } : { ...best, zeroLoss };
}
