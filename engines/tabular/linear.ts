/**
 * Engine 6's linear member: a regularised linear model (ridge regression; L2 logistic or multinomial
 * regression) on a fixed basis of the encoded features, fitted on the tree ensemble's own cross-fit
 * folds and blended with it by out-of-fold weights (pipeline.ts, trainPrepared for 6.0.0).
 *
 * Basis (computed from the feature values of all training rows, never from the target):
 * - numeric feature: missing or non-finite values filled with the median, clipped to the 0.5% and 99.5%
 *   quantiles, standardised; a missing indicator when some rows miss it; optionally hinge terms
 *   max(0, z - knot) at inner quantiles (a piecewise-linear, additive spline fit);
 * - categorical feature: one indicator per category code seen in the training rows (missing or an
 *   unseen code: all zero).
 * An unpenalised intercept per output. The L2 strength is chosen from a fixed grid by the summed
 * out-of-fold loss; the final model is the average of the fold models' coefficients (exactly one
 * linear model, as the tree predictor is the average of the fold ensembles).
 *
 * Fitting: one Gram matrix over all rows and one per fold (a fold's training Gram is their difference);
 * ridge regression is then one Cholesky solve per fold and strength; logistic and multinomial losses
 * are minimised by a majorise-minimise Newton iteration with the fixed curvature bound c·Z'Z (c = 1/4
 * binary, 1/2 multinomial; Böhning 1992), so each strength needs one factorisation and a few
 * gradient passes, warm-started from the next stronger strength. Deterministic: no random numbers.
 */
import type { InternalTask } from './train';

export interface LinearOptions {
  /** hinge knots per numeric feature (at inner quantiles); 0 = purely linear */
  hinges: number;
  /** L2 strengths, as multiples of the number of training rows, tried from the largest */
  alphas: number[];
  /** most majorise-minimise iterations per strength (classification) */
  maxIter: number;
  /** stop when no coefficient moves by more than this in an iteration */
  tol: number;
  /** blend with the trees: greedy selection steps and start (portfolio.ts, blendWeights) */
  blendSteps: number;
  blendStart: 'best' | 'all';
  /** compute budget: fitted only on data of at most this many rows */
  maxRows: number;
  /**
   * compute budget, classification: skip the member when rows x basis terms x outputs (the cost of
   * one gradient pass, of which a fit takes up to a few hundred) exceeds this
   */
  maxWork: number;
  /** compute budget, regression: skip the member when rows x basis terms² (its Gram matrix) exceeds this */
  maxGramWork: number;
  /**
   * compute budget, every task: skip the member when the basis has more terms than this. Each fit
   * factorises a (terms + 1)² matrix, cubic in the terms, once per fold and strength; on a wide table
   * of few rows the two budgets above still let thousands of terms through (80 rows of 300 columns:
   * 1,200 terms, training 4.5 times as long as the trees alone, for no weight).
   */
  maxTerms: number;
  /**
   * experiments: binary tasks boost the trees from the member's scores (each fold model from the
   * linear model fitted on its own training rows) instead of blending the two by out-of-fold weights
   */
  boostFrom?: boolean;
  /**
   * experiments, binary tasks: the trees and the member combined by a logistic regression of the
   * target on their out-of-fold raw scores (weights a, b of free scale and an intercept, stackWeights)
   * instead of by the convex blend; the usual blend when a weight comes out negative. 'roc_auc'
   * (experiments, twenty-first round), binary tasks: the convex blend's weight w of the member from
   * {0, 1/20, ..., 1}, the one of greatest out-of-fold ROC AUC of the blended raw scores (the smaller w
   * on ties), the forest and kNN members' binary rule, instead of the greedy blend by log loss
   */
  blendBy?: 'stack' | 'roc_auc';
}

export const DEFAULT_LINEAR_OPTIONS: LinearOptions = {
  hinges: 3,
  alphas: [0.1, 0.03, 0.01, 0.003, 0.001],
  maxIter: 20,
  tol: 1e-4,
  blendSteps: 25,
  blendStart: 'best',
  maxRows: 4000,
  maxWork: 3e5,
  maxGramWork: 1e8,
  maxTerms: 512,
};

/** Term kinds of the basis. */
export const TERM_LINEAR = 0;
export const TERM_MISSING = 1;
export const TERM_HINGE = 2;
export const TERM_CODE = 3;

/** The linear part of a model (artefact part of engine 6): raw = treeWeight · trees(x) + intercept + coef · basis(x). */
export interface LinearPart extends Basis {
  /** weight of the tree predictor's raw score in the blend */
  treeWeight: number;
  /** weight of the linear member (already folded into intercept and coef; informative) */
  linearWeight: number;
  nOutputs: number;
  /** per output */
  intercept: Float64Array;
  /** term-major: coef[d * nOutputs + k] */
  coef: Float64Array;
}

/** The fixed basis of the linear member, computed from the feature values only. */
export interface Basis {
  /** per encoded feature (numeric ones; zero for categorical): fill value, clip range, centre, scale */
  numFill: Float64Array;
  numLo: Float64Array;
  numHi: Float64Array;
  numMean: Float64Array;
  numScale: Float64Array;
  /** per basis term: feature, kind (TERM_*), value (hinge knot or category code) */
  termFeature: Int32Array;
  termKind: Uint8Array;
  termValue: Float64Array;
}

function quantileSorted(s: Float64Array, q: number): number {
  if (s.length === 0) return 0;
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(s.length - 1, lo + 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

/** The basis of the encoded matrix X (n x F); `categorical[f]` > 0 marks a categorical feature. */
export function fitBasis(X: Float64Array, n: number, F: number, categorical: ArrayLike<number>, hinges: number): Basis {
  const numFill = new Float64Array(F);
  const numLo = new Float64Array(F);
  const numHi = new Float64Array(F);
  const numMean = new Float64Array(F);
  const numScale = new Float64Array(F).fill(1);
  const feat: number[] = [];
  const kind: number[] = [];
  const value: number[] = [];
  for (let f = 0; f < F; f++) {
    if (categorical[f] > 0) {
      const seen = new Uint8Array(categorical[f]);
      for (let i = 0; i < n; i++) {
        const v = X[i * F + f];
        if (Number.isInteger(v) && v >= 0 && v < seen.length) seen[v] = 1;
      }
      for (let c = 0; c < seen.length; c++) {
        if (!seen[c]) continue;
        feat.push(f);
        kind.push(TERM_CODE);
        value.push(c);
      }
      continue;
    }
    const vals: number[] = [];
    for (let i = 0; i < n; i++) {
      const v = X[i * F + f];
      if (Number.isFinite(v)) vals.push(v);
    }
    if (vals.length === 0) continue;
    const s = Float64Array.from(vals).sort();
    const fill = quantileSorted(s, 0.5);
    const lo = quantileSorted(s, 0.005);
    const hi = quantileSorted(s, 0.995);
    if (!(hi > lo)) {
      // constant (after clipping): only its missingness can carry anything
      if (vals.length < n) {
        feat.push(f);
        kind.push(TERM_MISSING);
        value.push(0);
      }
      continue;
    }
    let mean = 0;
    for (let i = 0; i < n; i++) {
      const v = X[i * F + f];
      mean += Math.min(hi, Math.max(lo, Number.isFinite(v) ? v : fill));
    }
    mean /= n;
    let ss = 0;
    for (let i = 0; i < n; i++) {
      const v = X[i * F + f];
      ss += (Math.min(hi, Math.max(lo, Number.isFinite(v) ? v : fill)) - mean) ** 2;
    }
    const sd = Math.sqrt(ss / n);
    numFill[f] = fill;
    numLo[f] = lo;
    numHi[f] = hi;
    numMean[f] = mean;
    numScale[f] = sd > 0 ? sd : 1;
    feat.push(f);
    kind.push(TERM_LINEAR);
    value.push(0);
    if (vals.length < n) {
      feat.push(f);
      kind.push(TERM_MISSING);
      value.push(0);
    }
    if (hinges > 0) {
      // knots at inner quantiles of the standardised values, only where they are distinct
      let distinct = 1;
      for (let j = 1; j < s.length && distinct <= hinges + 2; j++) if (s[j] !== s[j - 1]) distinct++;
      if (distinct > hinges + 2) {
        let last = -Infinity;
        for (let h = 1; h <= hinges; h++) {
          const knot = (Math.min(hi, Math.max(lo, quantileSorted(s, h / (hinges + 1)))) - mean) / numScale[f];
          if (knot <= last) continue;
          last = knot;
          feat.push(f);
          kind.push(TERM_HINGE);
          value.push(knot);
        }
      }
    }
  }
  return { numFill, numLo, numHi, numMean, numScale, termFeature: Int32Array.from(feat), termKind: Uint8Array.from(kind), termValue: Float64Array.from(value) };
}

/** Basis values of one row (X at offset `base`) into `z` (length = number of terms). */
function basisRow(b: Basis, X: Float64Array, base: number, z: Float64Array): void {
  const D = b.termFeature.length;
  for (let d = 0; d < D; d++) {
    const f = b.termFeature[d];
    const x = X[base + f];
    switch (b.termKind[d]) {
      case TERM_LINEAR:
      case TERM_HINGE: {
        const v = Number.isFinite(x) ? x : b.numFill[f];
        const t = (Math.min(b.numHi[f], Math.max(b.numLo[f], v)) - b.numMean[f]) / b.numScale[f];
        z[d] = b.termKind[d] === TERM_LINEAR ? t : Math.max(0, t - b.termValue[d]);
        break;
      }
      case TERM_MISSING:
        z[d] = Number.isFinite(x) ? 0 : 1;
        break;
      default:
        z[d] = x === b.termValue[d] ? 1 : 0;
    }
  }
}

/** Basis matrix (n x D, row-major) of X. */
export function basisMatrix(b: Basis, X: Float64Array, n: number, F: number): Float64Array {
  const D = b.termFeature.length;
  const Z = new Float64Array(n * D);
  const z = new Float64Array(D);
  for (let i = 0; i < n; i++) {
    basisRow(b, X, i * F, z);
    Z.set(z, i * D);
  }
  return Z;
}

/**
 * Adds the linear part's raw scores to `raw` (n x K), after scaling the tree scores by treeWeight.
 * Each numeric feature's clipped, standardised value is computed once per row and shared by its
 * linear and hinge terms; the terms are summed in basis order, as in training's basis matrix.
 */
export function applyLinear(part: LinearPart, X: Float64Array, n: number, F: number, raw: Float64Array): void {
  const K = part.nOutputs;
  const { coef, intercept, treeWeight, termFeature, termKind, termValue, numFill, numLo, numHi, numMean, numScale } = part;
  const D = termFeature.length;
  // numeric features with a linear or hinge term
  const used: number[] = [];
  const seen = new Uint8Array(F);
  for (let d = 0; d < D; d++) {
    const f = termFeature[d];
    if ((termKind[d] === TERM_LINEAR || termKind[d] === TERM_HINGE) && !seen[f]) {
      seen[f] = 1;
      used.push(f);
    }
  }
  const t = new Float64Array(F);
  const s = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    const base = i * F;
    for (let u = 0; u < used.length; u++) {
      const f = used[u];
      const x = X[base + f];
      const v = Number.isFinite(x) ? x : numFill[f];
      t[f] = (Math.min(numHi[f], Math.max(numLo[f], v)) - numMean[f]) / numScale[f];
    }
    for (let k = 0; k < K; k++) s[k] = intercept[k];
    for (let d = 0; d < D; d++) {
      const f = termFeature[d];
      const kind = termKind[d];
      let v: number;
      if (kind === TERM_LINEAR) v = t[f];
      else if (kind === TERM_HINGE) v = Math.max(0, t[f] - termValue[d]);
      else if (kind === TERM_MISSING) v = Number.isFinite(X[base + f]) ? 0 : 1;
      else v = X[base + f] === termValue[d] ? 1 : 0;
      if (v === 0) continue;
      const c = d * K;
      for (let k = 0; k < K; k++) s[k] += v * coef[c + k];
    }
    for (let k = 0; k < K; k++) raw[i * K + k] = treeWeight * raw[i * K + k] + s[k];
  }
}

/** Gram matrix (upper triangle, P x P with P = D + 1: the intercept first) of the rows `rows` of Z. */
function gram(Z: Float64Array, D: number, rows: ArrayLike<number>): Float64Array {
  const P = D + 1;
  const G = new Float64Array(P * P);
  const z = new Float64Array(P);
  const nz = new Int32Array(P);
  for (let j = 0; j < rows.length; j++) {
    const off = rows[j] * D;
    z[0] = 1;
    let m = 1;
    nz[0] = 0;
    for (let d = 0; d < D; d++) {
      const v = Z[off + d];
      if (v !== 0) {
        z[d + 1] = v;
        nz[m++] = d + 1;
      }
    }
    for (let a = 0; a < m; a++) {
      const ia = nz[a];
      const va = z[ia];
      const rowBase = ia * P;
      for (let b = a; b < m; b++) G[rowBase + nz[b]] += va * z[nz[b]];
    }
  }
  return G;
}

/** In-place Cholesky factor (lower, row-major) of the symmetric matrix whose upper triangle is A. Returns false if not positive definite. */
function cholesky(A: Float64Array, P: number): boolean {
  for (let j = 0; j < P; j++) {
    let s = A[j * P + j];
    for (let k = 0; k < j; k++) s -= A[j * P + k] * A[j * P + k];
    if (!(s > 0)) return false;
    const d = Math.sqrt(s);
    A[j * P + j] = d;
    for (let i = j + 1; i < P; i++) {
      let t = A[j * P + i]; // upper-triangle entry (j, i) = (i, j)
      for (let k = 0; k < j; k++) t -= A[i * P + k] * A[j * P + k];
      A[i * P + j] = t / d;
    }
  }
  return true;
}

function cholSolve(L: Float64Array, P: number, b: Float64Array, x: Float64Array): void {
  for (let i = 0; i < P; i++) {
    let s = b[i];
    for (let k = 0; k < i; k++) s -= L[i * P + k] * x[k];
    x[i] = s / L[i * P + i];
  }
  for (let i = P - 1; i >= 0; i--) {
    let s = x[i];
    for (let k = i + 1; k < P; k++) s -= L[k * P + i] * x[k];
    x[i] = s / L[i * P + i];
  }
}

export interface LinearFit {
  /** out-of-fold raw scores (n x K), NaN where no fold held the row out */
  oofRaw: Float64Array;
  /** chosen strength (multiple of the training rows) */
  alpha: number;
  /** averaged coefficients: intercept (K) and coef (D x K) */
  intercept: Float64Array;
  coef: Float64Array;
  /** summed out-of-fold loss per strength, in the order of options.alphas (0 after the path stopped) */
  alphaLoss: Float64Array;
  /** the chosen strength's coefficients of each fold model (intercept K, then coef D x K) */
  foldBetas: Float64Array[];
}


function rowLoss(task: InternalTask, s: Float64Array, K: number, y: number): number {
  if (task === 'regression') return 0.5 * (s[0] - y) ** 2;
  if (task === 'binary') {
    const t = s[0];
    // log(1 + e^t) - y t, stably
    return (t > 0 ? t + Math.log1p(Math.exp(-t)) : Math.log1p(Math.exp(t))) - y * t;
  }
  let m = -Infinity;
  for (let k = 0; k < K; k++) if (s[k] > m) m = s[k];
  let z = 0;
  for (let k = 0; k < K; k++) z += Math.exp(s[k] - m);
  return m + Math.log(z) - s[y];
}

/**
 * Fits the linear member on the folds given by each fold model's held-out rows (`validRows`): one
 * fit per fold and strength, the strength with the least summed out-of-fold loss, and its fold
 * models' average. Returns null when the basis is empty.
 */
export function fitLinear(
  Z: Float64Array,
  n: number,
  D: number,
  y: Float64Array,
  task: InternalTask,
  nClasses: number,
  folds: Int32Array[],
  options: LinearOptions,
): LinearFit | null {
  const K = task === 'multiclass' ? nClasses : 1;
  const P = D + 1;
  const Gall = gram(Z, D, Int32Array.from({ length: n }, (_, i) => i));
  // the non-zero basis values by row (one-hot and hinge terms are mostly zero)
  let nnz = 0;
  for (let j = 0; j < Z.length; j++) if (Z[j] !== 0) nnz++;
  const rowStart = new Int32Array(n + 1);
  const col = new Int32Array(nnz);
  const val = new Float64Array(nnz);
  for (let i = 0, q = 0; i < n; i++) {
    for (let d = 0; d < D; d++) {
      const v = Z[i * D + d];
      if (v === 0) continue;
      col[q] = (d + 1) * K;
      val[q++] = v;
    }
    rowStart[i + 1] = q;
  }
  const scores = (i: number, b: Float64Array, out: Float64Array): void => {
    const e = rowStart[i + 1];
    if (K === 1) {
      let t = b[0];
      for (let q = rowStart[i]; q < e; q++) t += val[q] * b[col[q]];
      out[0] = t;
      return;
    }
    for (let k = 0; k < K; k++) out[k] = b[k];
    for (let q = rowStart[i]; q < e; q++) {
      const v = val[q];
      const c0 = col[q];
      for (let k = 0; k < K; k++) out[k] += v * b[c0 + k];
    }
  };
  const c = task === 'regression' ? 1 : task === 'binary' ? 0.25 : 0.5;
  const A = options.alphas;
  const alphaLoss = new Float64Array(A.length);
  const oofByAlpha = A.map(() => new Float64Array(n * K).fill(NaN));
  // how many more times than once a row was held out (0 for every row of one cross-fit's folds)
  const heldAgain = new Int32Array(n);
  const betas: Float64Array[][] = A.map(() => []);
  const s = new Float64Array(K);
  const p = new Float64Array(K);
  /** gradient of the penalised loss at b over the rows `tr`, into g */
  const gradient = (b: Float64Array, lambda: number, tr: number[], g: Float64Array): void => {
    g.fill(0);
    for (let j = 0; j < tr.length; j++) {
      const i = tr[j];
      scores(i, b, s);
      if (task === 'regression') p[0] = s[0] - y[i];
      else if (task === 'binary') p[0] = 1 / (1 + Math.exp(-s[0])) - y[i];
      else {
        let m = -Infinity;
        for (let k = 0; k < K; k++) if (s[k] > m) m = s[k];
        let zs = 0;
        for (let k = 0; k < K; k++) zs += (p[k] = Math.exp(s[k] - m));
        for (let k = 0; k < K; k++) p[k] = p[k] / zs - (y[i] === k ? 1 : 0);
      }
      const e = rowStart[i + 1];
      if (K === 1) {
        const r = p[0];
        g[0] += r;
        for (let q = rowStart[i]; q < e; q++) g[col[q]] += val[q] * r;
        continue;
      }
      for (let k = 0; k < K; k++) g[k] += p[k];
      for (let q = rowStart[i]; q < e; q++) {
        const v = val[q];
        const c0 = col[q];
        for (let k = 0; k < K; k++) g[c0 + k] += v * p[k];
      }
    }
    for (let d = 1; d < P; d++) for (let k = 0; k < K; k++) g[d * K + k] += lambda * b[d * K + k];
  };
  // per fold: training rows, training Gram, current coefficients (warm start along the strengths)
  const state = folds.map((va) => {
    const inVa = new Uint8Array(n);
    for (let j = 0; j < va.length; j++) inVa[va[j]] = 1;
    const tr: number[] = [];
    for (let i = 0; i < n; i++) if (!inVa[i]) tr.push(i);
    const nTr = tr.length;
    const Gva = gram(Z, D, va);
    const Gtr = new Float64Array(P * P);
    for (let j = 0; j < Gtr.length; j++) Gtr[j] = Gall[j] - Gva[j];
    // start: zero slopes, intercept at the training mean (regression) or log prior
    const beta = new Float64Array(P * K);
    if (task === 'regression') {
      let m = 0;
      for (const i of tr) m += y[i];
      beta[0] = nTr > 0 ? m / nTr : 0;
    } else {
      const cnt = new Float64Array(Math.max(2, nClasses));
      for (const i of tr) cnt[y[i]]++;
      if (task === 'binary') beta[0] = Math.log((cnt[1] + 0.5) / (cnt[0] + 0.5));
      else for (let k = 0; k < K; k++) beta[k] = Math.log((cnt[k] + 0.5) / (nTr + 0.5 * K));
    }
    return { va, tr, nTr, Gtr, beta };
  });
  if (state.some((f) => f.nTr === 0)) return null;
  const L = new Float64Array(P * P);
  const prev = new Float64Array(P * K);
  const next = new Float64Array(P * K);
  const g = new Float64Array(P * K);
  const gk = new Float64Array(P);
  const step = new Float64Array(P);
  let bestSoFar = Infinity;
  for (let a = 0; a < A.length; a++) {
    for (const { va, tr, nTr, Gtr, beta } of state) {
      const lambda = A[a] * nTr;
      L.set(Gtr);
      for (let j = 0; j < L.length; j++) L[j] *= c;
      L[0] += 1e-9 * nTr;
      for (let d = 1; d < P; d++) L[d * P + d] += lambda;
      if (!cholesky(L, P)) return null;
      const iters = task === 'regression' ? 1 : options.maxIter;
      // accelerated (Nesterov) majorise-minimise steps from the extrapolated point `beta`, with a
      // restart of the momentum whenever the step turns against the previous one
      prev.set(beta);
      let tk = 1;
      for (let it = 0; it < iters; it++) {
        gradient(beta, lambda, tr, g);
        let maxStep = 0;
        for (let k = 0; k < K; k++) {
          for (let d = 0; d < P; d++) gk[d] = g[d * K + k];
          cholSolve(L, P, gk, step);
          for (let d = 0; d < P; d++) {
            next[d * K + k] = beta[d * K + k] - step[d];
            if (Math.abs(step[d]) > maxStep) maxStep = Math.abs(step[d]);
          }
        }
        if (maxStep < options.tol || it === iters - 1) {
          beta.set(next);
          break;
        }
        // restart when the new step points back (gradient-based restart, O'Donoghue & Candès 2015)
        let dot = 0;
        for (let j = 0; j < next.length; j++) dot += (next[j] - prev[j]) * (beta[j] - next[j]);
        const tNext = dot > 0 ? 1 : (1 + Math.sqrt(1 + 4 * tk * tk)) / 2;
        const mom = dot > 0 ? 0 : (tk - 1) / tNext;
        tk = tNext;
        for (let j = 0; j < next.length; j++) {
          const v = next[j];
          beta[j] = v + mom * (v - prev[j]);
          prev[j] = v;
        }
      }
      betas[a].push(beta.slice());
      let l = 0;
      const oof = oofByAlpha[a];
      for (let j = 0; j < va.length; j++) {
        const i = va[j];
        scores(i, beta, s);
        // a row held out by several folds (a repeated cross-fit, EngineConfig.repeats): the sum, then the mean below
        if (Number.isNaN(oof[i * K])) for (let k = 0; k < K; k++) oof[i * K + k] = s[k];
        else {
          for (let k = 0; k < K; k++) oof[i * K + k] += s[k];
          heldAgain[i]++;
        }
        l += rowLoss(task, s, K, y[i]);
      }
      alphaLoss[a] += l;
    }
    if (folds.length > 0) {
      const oof = oofByAlpha[a];
      for (let i = 0; i < n; i++) {
        if (heldAgain[i] === 0) continue;
        for (let k = 0; k < K; k++) oof[i * K + k] /= heldAgain[i] + 1;
        heldAgain[i] = 0;
      }
    }
    // the out-of-fold loss along the strengths is unimodal in practice: stop once it rises
    if (alphaLoss[a] > bestSoFar) break;
    bestSoFar = Math.min(bestSoFar, alphaLoss[a]);
  }
  let best = -1;
  for (let a = 0; a < A.length; a++) {
    if (betas[a].length !== folds.length) continue;
    if (best < 0 || alphaLoss[a] < alphaLoss[best]) best = a;
  }
  if (best < 0) return null;
  const avg = new Float64Array(P * K);
  for (const b of betas[best]) for (let j = 0; j < avg.length; j++) avg[j] += b[j] / betas[best].length;
  return { oofRaw: oofByAlpha[best], alpha: A[best], intercept: avg.slice(0, K), coef: avg.slice(K), alphaLoss, foldBetas: betas[best] };
}

/**
 * Experiments (LinearOptions.blendBy 'stack'): the logistic regression y ~ c + a t + b l on the rows
 * where both raw scores are known (Newton steps with a ridge of `ridge` on a and b), or null when it
 * does not converge to finite values.
 */
export function stackWeights(t: Float64Array, l: Float64Array, y: Float64Array, ridge = 1e-3, iters = 50): { a: number; b: number; c: number } | null {
  const rows: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(t[i]) && !Number.isNaN(l[i])) rows.push(i);
  if (rows.length < 3) return null;
  let a = 0.5;
  let b = 0.5;
  let c = 0;
  for (let it = 0; it < iters; it++) {
    // gradient and Hessian of the mean negative log-likelihood (+ ridge / 2 (a² + b²))
    let ga = ridge * a, gb = ridge * b, gc = 0;
    let haa = ridge, hab = 0, hac = 0, hbb = ridge, hbc = 0, hcc = 1e-9;
    const m = rows.length;
    for (const i of rows) {
      const z = c + a * t[i] + b * l[i];
      const p = 1 / (1 + Math.exp(-z));
      const r = (p - y[i]) / m;
      const w = (p * (1 - p)) / m;
      ga += r * t[i]; gb += r * l[i]; gc += r;
      haa += w * t[i] * t[i]; hab += w * t[i] * l[i]; hac += w * t[i];
      hbb += w * l[i] * l[i]; hbc += w * l[i]; hcc += w;
    }
    // solve the 3 x 3 system H d = g (Cramer's rule)
    const det = haa * (hbb * hcc - hbc * hbc) - hab * (hab * hcc - hbc * hac) + hac * (hab * hbc - hbb * hac);
    if (!(Math.abs(det) > 1e-300)) return null;
    const da = (ga * (hbb * hcc - hbc * hbc) - hab * (gb * hcc - hbc * gc) + hac * (gb * hbc - hbb * gc)) / det;
    const db = (haa * (gb * hcc - hbc * gc) - ga * (hab * hcc - hbc * hac) + hac * (hab * gc - gb * hac)) / det;
    const dc = (haa * (hbb * gc - gb * hbc) - hab * (hab * gc - gb * hac) + ga * (hab * hbc - hbb * hac)) / det;
    a -= da; b -= db; c -= dc;
    if (!Number.isFinite(a) || !Number.isFinite(b) || !Number.isFinite(c)) return null;
    if (Math.abs(da) + Math.abs(db) + Math.abs(dc) < 1e-10) break;
  }
  return { a, b, c };
}
