import { HuberLoss, LogLoss, SoftmaxLoss, SquaredError, type Loss } from '../../../engines/tabular/loss';
import { Prng } from '../../../engines/tabular/prng';

function checkFiniteDifferences(loss: Loss, y: Float64Array, raw: Float64Array): void {
  const K = loss.nOutputs;
  const n = y.length;
  const grad = new Float64Array(n * K);
  const hess = new Float64Array(n * K);
  loss.gradHess(y, raw, grad, hess);
  const h = 1e-4;
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < K; k++) {
      const plus = raw.slice();
      const minus = raw.slice();
      plus[i * K + k] += h;
      minus[i * K + k] -= h;
      const lp = loss.rowLoss(y, plus, i);
      const lm = loss.rowLoss(y, minus, i);
      const l0 = loss.rowLoss(y, raw, i);
      const g = (lp - lm) / (2 * h);
      const d2 = (lp - 2 * l0 + lm) / (h * h);
      expect(grad[k * n + i]).toBeCloseTo(g, 5);
      if (loss instanceof SoftmaxLoss) {
        // LightGBM-style scaled diagonal: K/(K-1) * p(1-p)
        expect(hess[k * n + i]).toBeCloseTo((d2 * K) / (K - 1), 3);
      } else {
        expect(hess[k * n + i]).toBeCloseTo(d2, 3);
      }
    }
  }
}

describe('losses: gradients and hessians match finite differences', () => {
  const rng = new Prng(3);
  it('binary log loss', () => {
    const y = Float64Array.from({ length: 20 }, () => rng.nextInt(2));
    const raw = Float64Array.from({ length: 20 }, () => rng.nextFloat() * 6 - 3);
    checkFiniteDifferences(new LogLoss(), y, raw);
  });
  it('multiclass softmax', () => {
    const K = 4;
    const y = Float64Array.from({ length: 15 }, () => rng.nextInt(K));
    const raw = Float64Array.from({ length: 15 * K }, () => rng.nextFloat() * 4 - 2);
    checkFiniteDifferences(new SoftmaxLoss(K), y, raw);
  });
  it('squared error', () => {
    const y = Float64Array.from({ length: 20 }, () => rng.nextFloat() * 10);
    const raw = Float64Array.from({ length: 20 }, () => rng.nextFloat() * 10);
    checkFiniteDifferences(new SquaredError(), y, raw);
  });
  it('huber (away from the kink)', () => {
    const loss = new HuberLoss(1);
    const y = Float64Array.from({ length: 20 }, () => rng.nextFloat() * 10);
    const raw = Float64Array.from(y, (v, i) => v + (i % 2 ? 0.3 : 2.5) * (i % 3 ? 1 : -1));
    const grad = new Float64Array(20);
    const hess = new Float64Array(20);
    loss.gradHess(y, raw, grad, hess);
    for (let i = 0; i < 20; i++) {
      const p = raw.slice();
      const m = raw.slice();
      p[i] += 1e-5;
      m[i] -= 1e-5;
      expect(grad[i]).toBeCloseTo((loss.rowLoss(y, p, i) - loss.rowLoss(y, m, i)) / 2e-5, 5);
    }
    // beyond delta the gradient is clipped
    expect(Math.max(...Array.from(grad, Math.abs))).toBeLessThanOrEqual(1);
  });
  it('initial scores are the constant minimisers', () => {
    const y = Float64Array.from([0, 1, 1, 1]);
    expect(new LogLoss().initScores(y)[0]).toBeCloseTo(Math.log(3), 10);
    expect(new SquaredError().initScores(Float64Array.from([1, 2, 6]))[0]).toBeCloseTo(3, 10);
    const s = new SoftmaxLoss(3).initScores(Float64Array.from([0, 0, 1, 2]));
    expect(Math.exp(s[0]) / (Math.exp(s[0]) + Math.exp(s[1]) + Math.exp(s[2]))).toBeCloseTo(0.5, 10);
  });
});

describe('class-major raw scores (the boosting loop\'s layout)', () => {
  it('give the same gradients, hessians and mean loss as the row-major methods, bit for bit, for all rows and for a sample', () => {
    const rng = new Prng(11);
    const K = 7;
    const n = 53;
    const y = Float64Array.from({ length: n }, () => rng.nextInt(K));
    const rowMajor = Float64Array.from({ length: n * K }, () => rng.nextFloat() * 30 - 15);
    // ties and extreme scores too
    rowMajor[3 * K + 2] = rowMajor[3 * K + 5];
    rowMajor[8 * K] = 700;
    const classMajor = new Float64Array(n * K);
    for (let i = 0; i < n; i++) for (let k = 0; k < K; k++) classMajor[k * n + i] = rowMajor[i * K + k];
    const loss = new SoftmaxLoss(K);
    const sample = Uint32Array.from([0, 3, 8, 9, 20, 52]);
    for (const rows of [undefined, sample]) {
      const [g1, h1, g2, h2] = [0, 1, 2, 3].map(() => new Float64Array(n * K).fill(-1));
      loss.gradHess(y, rowMajor, g1, h1, rows, rows?.length);
      loss.gradHessClassMajor(y, classMajor, g2, h2, rows, rows?.length);
      expect(Array.from(g2, (v, j) => Object.is(v, g1[j]))).not.toContain(false);
      expect(Array.from(h2, (v, j) => Object.is(v, h1[j]))).not.toContain(false);
    }
    expect(Object.is(loss.lossClassMajor(y, classMajor), loss.loss(y, rowMajor))).toBe(true);
    const binary = new LogLoss();
    const yb = Float64Array.from({ length: n }, () => rng.nextInt(2));
    const raw = Float64Array.from({ length: n }, () => rng.nextFloat() * 6 - 3);
    expect(binary.lossClassMajor(yb, raw)).toBe(binary.loss(yb, raw));
  });
});
