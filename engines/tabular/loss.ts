/**
 * Losses: one class per objective, each giving initial raw scores, gradients and hessians with
 * respect to the raw score, the mean loss, and the transform from raw scores to predictions.
 * Raw scores are row-major (n x K); gradients/hessians are class-major (K x n) so that the grower
 * gets one contiguous array per class. The boosting loop keeps its raw scores class-major too (the
 * `ClassMajor` methods: the same values, bit for bit), as each tree adds to one class's scores.
 */

export type LossName = 'log_loss' | 'softmax' | 'squared_error' | 'huber';

export interface Loss {
  readonly name: LossName;
  readonly nOutputs: number;
  initScores(y: Float64Array): Float64Array;
  /**
   * Gradients and hessians of every row, or with `rows` of the rows rows[0..m) only (the others are
   * left as they were: a boosting round reads those of its sample only).
   */
  gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void;
  /** Loss of one row (used for paired comparisons and finite-difference tests). */
  rowLoss(y: Float64Array, raw: Float64Array, i: number): number;
  /** Mean loss over all rows. */
  loss(y: Float64Array, raw: Float64Array): number;
  /** gradHess with the raw scores class-major (K x n): the same gradients and hessians, bit for bit. */
  gradHessClassMajor(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void;
  /** loss with the raw scores class-major (K x n): the same mean loss, bit for bit. */
  lossClassMajor(y: Float64Array, raw: Float64Array): number;
}

const EPS = 1e-15;

/** log(1 + e^t), stably. */
export function softplus(t: number): number {
  return t > 0 ? t + Math.log1p(Math.exp(-t)) : Math.log1p(Math.exp(t));
}

function sigmoid(x: number): number {
  return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
}

abstract class BaseLoss implements Loss {
  abstract readonly name: LossName;
  abstract readonly nOutputs: number;
  abstract initScores(y: Float64Array): Float64Array;
  abstract gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void;
  abstract rowLoss(y: Float64Array, raw: Float64Array, i: number): number;
  loss(y: Float64Array, raw: Float64Array): number {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += this.rowLoss(y, raw, i);
    return y.length > 0 ? s / y.length : 0;
  }
  // one output: the two layouts are the same array
  gradHessClassMajor(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    this.gradHess(y, raw, grad, hess, rows, m);
  }
  lossClassMajor(y: Float64Array, raw: Float64Array): number {
    return this.loss(y, raw);
  }
}

/** Binary log loss on the logit; y in {0, 1}. */
export class LogLoss extends BaseLoss {
  readonly name = 'log_loss' as const;
  readonly nOutputs = 1;
  initScores(y: Float64Array): Float64Array {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += y[i];
    const p = Math.min(1 - 1e-6, Math.max(1e-6, s / Math.max(1, y.length)));
    return Float64Array.of(Math.log(p / (1 - p)));
  }
  gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    const count = rows ? (m as number) : y.length;
    for (let k = 0; k < count; k++) {
      const i = rows ? rows[k] : k;
      const p = sigmoid(raw[i]);
      grad[i] = p - y[i];
      hess[i] = Math.max(p * (1 - p), 1e-16);
    }
  }
  rowLoss(y: Float64Array, raw: Float64Array, i: number): number {
    // log(1 + e^z) - y z, computed stably
    const z = raw[i];
    return softplus(z) - y[i] * z;
  }
}

/** Multiclass softmax cross-entropy; y holds class indices 0..K-1. */
export class SoftmaxLoss extends BaseLoss {
  readonly name = 'softmax' as const;
  readonly nOutputs: number;
  constructor(k: number) {
    super();
    this.nOutputs = k;
  }
  initScores(y: Float64Array): Float64Array {
    const K = this.nOutputs;
    const c = new Float64Array(K);
    for (let i = 0; i < y.length; i++) c[y[i]]++;
    const out = new Float64Array(K);
    let mean = 0;
    for (let k = 0; k < K; k++) {
      out[k] = Math.log(Math.max(c[k], 0.5) / Math.max(1, y.length));
      mean += out[k] / K;
    }
    for (let k = 0; k < K; k++) out[k] -= mean;
    return out;
  }
  gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    const K = this.nOutputs;
    const n = y.length;
    const p = new Float64Array(K);
    // K/(K-1) scaling of the diagonal hessian, as in LightGBM's multiclass objective.
    const factor = K / (K - 1);
    const count = rows ? (m as number) : n;
    for (let r = 0; r < count; r++) {
      const i = rows ? rows[r] : r;
      // softmaxRow's operations, with its last pass (e / s) fused into the gradient's
      const off = i * K;
      let mx = -Infinity;
      for (let k = 0; k < K; k++) if (raw[off + k] > mx) mx = raw[off + k];
      let s = 0;
      for (let k = 0; k < K; k++) {
        const e = Math.exp(raw[off + k] - mx);
        p[k] = e;
        s += e;
      }
      const yi = y[i];
      for (let k = 0; k < K; k++) {
        const pk = p[k] / s;
        grad[k * n + i] = pk - (yi === k ? 1 : 0);
        hess[k * n + i] = Math.max(factor * pk * (1 - pk), 1e-16);
      }
    }
  }
  rowLoss(y: Float64Array, raw: Float64Array, i: number): number {
    const K = this.nOutputs;
    const base = i * K;
    let mx = -Infinity;
    for (let k = 0; k < K; k++) if (raw[base + k] > mx) mx = raw[base + k];
    let s = 0;
    for (let k = 0; k < K; k++) s += Math.exp(raw[base + k] - mx);
    return Math.log(s) + mx - raw[base + y[i]];
  }
  /**
   * The class-major passes' per-row maxima (which 0) and sums (which 1), kept between calls: a boosting
   * loop calls them every round, and two fresh arrays per call were garbage for the collector. Each
   * call uses the first `length` entries only, after filling them.
   */
  private readonly buffers: Float64Array[] = [new Float64Array(0), new Float64Array(0)];
  private scratch(length: number, which: 0 | 1): Float64Array {
    if (this.buffers[which].length < length) this.buffers[which] = new Float64Array(length);
    return this.buffers[which];
  }
  // gradHess's and loss's operations, each row's in the same order (classes 0..K-1), done one class at
  // a time so that every pass reads and writes one class's contiguous scores
  override gradHessClassMajor(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    const K = this.nOutputs;
    const n = y.length;
    const factor = K / (K - 1);
    const count = rows ? (m as number) : n;
    const mx = this.scratch(count, 0).fill(-Infinity, 0, count);
    const sum = this.scratch(count, 1).fill(0, 0, count);
    for (let k = 0; k < K; k++) {
      const off = k * n;
      for (let r = 0; r < count; r++) {
        const v = raw[off + (rows ? rows[r] : r)];
        if (v > mx[r]) mx[r] = v;
      }
    }
    // exp(score - max) of each class kept in grad until the sum is known
    for (let k = 0; k < K; k++) {
      const off = k * n;
      for (let r = 0; r < count; r++) {
        const q = off + (rows ? rows[r] : r);
        const e = Math.exp(raw[q] - mx[r]);
        grad[q] = e;
        sum[r] += e;
      }
    }
    for (let k = 0; k < K; k++) {
      const off = k * n;
      for (let r = 0; r < count; r++) {
        const i = rows ? rows[r] : r;
        const pk = grad[off + i] / sum[r];
        grad[off + i] = pk - (y[i] === k ? 1 : 0);
        hess[off + i] = Math.max(factor * pk * (1 - pk), 1e-16);
      }
    }
  }
  override lossClassMajor(y: Float64Array, raw: Float64Array): number {
    const K = this.nOutputs;
    const n = y.length;
    const mx = this.scratch(n, 0).fill(-Infinity, 0, n);
    const sum = this.scratch(n, 1).fill(0, 0, n);
    for (let k = 0; k < K; k++) {
      const off = k * n;
      for (let i = 0; i < n; i++) if (raw[off + i] > mx[i]) mx[i] = raw[off + i];
    }
    for (let k = 0; k < K; k++) {
      const off = k * n;
      for (let i = 0; i < n; i++) sum[i] += Math.exp(raw[off + i] - mx[i]);
    }
    let total = 0;
    for (let i = 0; i < n; i++) total += Math.log(sum[i]) + mx[i] - raw[y[i] * n + i];
    return n > 0 ? total / n : 0;
  }
}

export function softmaxRow(raw: Float64Array, off: number, K: number, out: Float64Array, outOff: number): void {
  let mx = -Infinity;
  for (let k = 0; k < K; k++) if (raw[off + k] > mx) mx = raw[off + k];
  let s = 0;
  for (let k = 0; k < K; k++) {
    const e = Math.exp(raw[off + k] - mx);
    out[outOff + k] = e;
    s += e;
  }
  for (let k = 0; k < K; k++) out[outOff + k] /= s;
}

/** Half squared error: (raw - y)^2 / 2. */
export class SquaredError extends BaseLoss {
  readonly name = 'squared_error' as const;
  readonly nOutputs = 1;
  initScores(y: Float64Array): Float64Array {
    let s = 0;
    for (let i = 0; i < y.length; i++) s += y[i];
    return Float64Array.of(y.length > 0 ? s / y.length : 0);
  }
  gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    const count = rows ? (m as number) : y.length;
    for (let k = 0; k < count; k++) {
      const i = rows ? rows[k] : k;
      grad[i] = raw[i] - y[i];
      hess[i] = 1;
    }
  }
  rowLoss(y: Float64Array, raw: Float64Array, i: number): number {
    const d = raw[i] - y[i];
    return 0.5 * d * d;
  }
}

/** Huber loss with threshold delta: quadratic near zero, linear beyond (robust to outliers). */
export class HuberLoss extends BaseLoss {
  readonly name = 'huber' as const;
  readonly nOutputs = 1;
  constructor(readonly delta: number) {
    super();
  }
  initScores(y: Float64Array): Float64Array {
    const s = Float64Array.from(y).sort();
    const m = s.length;
    return Float64Array.of(m === 0 ? 0 : m % 2 ? s[(m - 1) / 2] : (s[m / 2 - 1] + s[m / 2]) / 2);
  }
  gradHess(y: Float64Array, raw: Float64Array, grad: Float64Array, hess: Float64Array, rows?: Uint32Array, m?: number): void {
    const d = this.delta;
    const count = rows ? (m as number) : y.length;
    for (let k = 0; k < count; k++) {
      const i = rows ? rows[k] : k;
      const r = raw[i] - y[i];
      grad[i] = r > d ? d : r < -d ? -d : r;
      hess[i] = 1;
    }
  }
  rowLoss(y: Float64Array, raw: Float64Array, i: number): number {
    const r = Math.abs(raw[i] - y[i]);
    const d = this.delta;
    return r <= d ? 0.5 * r * r : d * (r - 0.5 * d);
  }
}

export function makeLoss(name: LossName, nClasses: number, y?: Float64Array): Loss {
  switch (name) {
    case 'log_loss':
      return new LogLoss();
    case 'softmax':
      return new SoftmaxLoss(nClasses);
    case 'squared_error':
      return new SquaredError();
    case 'huber': {
      // delta: 1.35 x robust scale (MAD / 0.6745) of the target around its median
      let delta = 1;
      if (y && y.length > 0) {
        const s = Float64Array.from(y).sort();
        const med = s[Math.floor(s.length / 2)];
        const dev = Float64Array.from(s, (v) => Math.abs(v - med)).sort();
        const mad = dev[Math.floor(dev.length / 2)] / 0.6745;
        delta = 1.35 * (mad > 0 ? mad : 1);
      }
      return new HuberLoss(delta);
    }
    default:
      throw new Error(`unknown loss ${String(name)}`);
  }
}

export { EPS, sigmoid };
