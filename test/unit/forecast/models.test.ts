import { ARIMA_METHOD, armaExactLik, autoArima, fitArima } from '../../../engines/forecast/models/arima';
import { autoEts, fitEtsSpec } from '../../../engines/forecast/models/ets';
import { autoTheta } from '../../../engines/forecast/models/theta';
import { fitDrift, fitNaive, fitSeasonalNaive } from '../../../engines/forecast/models/naive';
import { normals } from './helpers';

function simulateEts(n: number, seed: number, p: { alpha: number; beta?: number; gamma?: number; m?: number; l0: number; b0?: number; sigma: number }): number[] {
  const z = normals(seed);
  const m = p.m ?? 1;
  let l = p.l0, b = p.b0 ?? 0;
  const s = Array.from({ length: m }, (_, i) => (p.gamma !== undefined ? 10 * Math.sin((2 * Math.PI * i) / m) : 0));
  const y: number[] = [];
  for (let t = 0; t < n; t++) {
    const e = p.sigma * z();
    const si = s[t % m];
    y.push(l + b + si + e);
    l = l + b + p.alpha * e;
    b = b + (p.beta ?? 0) * e;
    if (p.gamma !== undefined) s[t % m] = si + p.gamma * e;
  }
  return y;
}

function simulateArma(n: number, seed: number, ar: number[], ma: number[], mu = 0, burn = 200): number[] {
  const z = normals(seed);
  const x: number[] = [];
  const e: number[] = [];
  for (let t = 0; t < n + burn; t++) {
    const et = z();
    let v = et;
    for (let i = 0; i < ar.length; i++) v += t - 1 - i >= 0 ? ar[i] * x[t - 1 - i] : 0;
    for (let j = 0; j < ma.length; j++) v += t - 1 - j >= 0 ? ma[j] * e[t - 1 - j] : 0;
    x.push(v);
    e.push(et);
  }
  return x.slice(burn).map((v) => v + mu);
}

describe('ETS recovers known parameters', () => {
  test('ETS(A,N,N) α = 0.3', () => {
    const y = simulateEts(600, 1, { alpha: 0.3, l0: 100, sigma: 2 });
    const fit = fitEtsSpec(y, { error: 'A', trend: 'N', season: 'N' }, 1)!;
    expect(fit.params.alpha).toBeGreaterThan(0.2);
    expect(fit.params.alpha).toBeLessThan(0.4);
    expect(fit.sigma).toBeGreaterThan(1.8);
    expect(fit.sigma).toBeLessThan(2.2);
  });

  test('ETS(A,A,N) α = 0.5, β = 0.1', () => {
    const y = simulateEts(800, 2, { alpha: 0.5, beta: 0.1, l0: 50, b0: 1, sigma: 1 });
    const fit = fitEtsSpec(y, { error: 'A', trend: 'A', season: 'N' }, 1)!;
    expect(Math.abs(fit.params.alpha - 0.5)).toBeLessThan(0.1);
    expect(Math.abs(fit.params.beta - 0.1)).toBeLessThan(0.05);
  });

  test('ETS(A,N,A) α = 0.2, γ = 0.15 with m = 4', () => {
    const y = simulateEts(800, 3, { alpha: 0.2, gamma: 0.15, m: 4, l0: 100, sigma: 1 });
    const fit = fitEtsSpec(y, { error: 'A', trend: 'N', season: 'A' }, 4)!;
    expect(Math.abs(fit.params.alpha - 0.2)).toBeLessThan(0.08);
    expect(Math.abs(fit.params.gamma - 0.15)).toBeLessThan(0.08);
  });

  test('initial seasonal states by maximum likelihood recover the true ones of a drifting pattern', () => {
    // the seasonal pattern drifts (γ = 0.3), so indices averaged over the whole history (decomposition)
    // differ from the initial states; estimating them with the other parameters recovers them
    for (const seed of [6, 7, 8]) {
      const z = normals(seed);
      const s = [0, 10, 0, -10];
      const truth = s.slice();
      let l = 100;
      const y: number[] = [];
      for (let t = 0; t < 80; t++) {
        const e = z();
        const si = s[t % 4];
        y.push(l + si + e);
        l += 0.2 * e;
        s[t % 4] = si + 0.3 * e;
      }
      const spec = { error: 'A', trend: 'N', season: 'A' } as const;
      const dec = fitEtsSpec(y, spec, 4)!;
      const ml = fitEtsSpec(y, spec, 4, 'ml')!;
      const err = (f: typeof dec) => Math.max(...f.params.s0.map((v, i) => Math.abs(v - truth[i])));
      expect(ml.params.s0.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 8);
      expect(ml.aicc).toBeLessThanOrEqual(dec.aicc + 1e-9);
      expect(err(ml)).toBeLessThan(1.5);
      expect(err(ml)).toBeLessThan(err(dec));
    }
  });

  test('AICc selection finds the seasonal component and not a spurious one', () => {
    const seasonal = simulateEts(200, 4, { alpha: 0.2, gamma: 0.1, m: 4, l0: 100, sigma: 1 });
    expect(autoEts(seasonal, { seasonLength: 4 }).spec.season).not.toBe('N');
    const plain = simulateEts(200, 5, { alpha: 0.3, l0: 100, sigma: 1 });
    const fit = autoEts(plain, { seasonLength: 1 });
    expect(fit.spec.season).toBe('N');
    expect(fit.spec.trend).toBe('N');
  });
});

describe('ARIMA recovers known parameters', () => {
  test('AR(1) φ = 0.7', () => {
    const y = simulateArma(600, 11, [0.7], [], 10);
    const fit = fitArima(y, { p: 1, d: 0, q: 0, P: 0, D: 0, Q: 0, m: 1, constant: true })!;
    expect(Math.abs(fit.ar[0] - 0.7)).toBeLessThan(0.07);
    expect(Math.abs(fit.mu - 10)).toBeLessThan(0.5);
    expect(Math.abs(Math.sqrt(fit.sigma2) - 1)).toBeLessThan(0.1);
  });

  test('MA(1) θ = 0.5', () => {
    const y = simulateArma(600, 12, [], [0.5]);
    const fit = fitArima(y, { p: 0, d: 0, q: 1, P: 0, D: 0, Q: 0, m: 1, constant: false })!;
    expect(Math.abs(fit.ma[0] - 0.5)).toBeLessThan(0.08);
  });

  test('exact likelihood (Kalman filter) refines MA(1) θ = 0.6 and is maximal near the truth', () => {
    const y = simulateArma(400, 16, [], [0.6]);
    const lik = (th: number) => armaExactLik(y, [], [th]).lik;
    expect(lik(0.6)).toBeLessThan(lik(0.3));
    expect(lik(0.6)).toBeLessThan(lik(0.9));
    ARIMA_METHOD.exact = true;
    try {
      const fit = fitArima(y, { p: 0, d: 0, q: 1, P: 0, D: 0, Q: 0, m: 1, constant: false })!;
      expect(Math.abs(fit.ma[0] - 0.6)).toBeLessThan(0.08);
    } finally {
      ARIMA_METHOD.exact = false;
    }
  });

  test('seasonal AR Φ = 0.6 at lag 4', () => {
    const y = simulateArma(800, 13, [0, 0, 0, 0.6], []);
    const fit = fitArima(y, { p: 0, d: 0, q: 0, P: 1, D: 0, Q: 0, m: 4, constant: false })!;
    expect(Math.abs(fit.ar[3] - 0.6)).toBeLessThan(0.08);
  });

  test('auto order selection: a random walk with MA(1) errors gives d = 1 and θ ≈ −0.4', () => {
    const x = simulateArma(500, 14, [], [-0.4]);
    const y: number[] = [];
    x.reduce((acc, v) => {
      y.push(acc + v);
      return acc + v;
    }, 100);
    const fit = autoArima(y, { seasonLength: 1 });
    expect(fit.order.d).toBe(1);
    expect(fit.order.q).toBeGreaterThanOrEqual(1);
    expect(fit.order.p).toBe(0);
    expect(Math.abs(fit.ma[0] + 0.4)).toBeLessThan(0.1);
  });

  test('auto order selection: white noise around a mean is stationary with a constant and negligible dynamics', () => {
    const y = simulateArma(300, 15, [], [], 50);
    const fit = autoArima(y, { seasonLength: 1 });
    expect(fit.order.d).toBe(0);
    expect(fit.order.constant).toBe(true);
    expect(fit.order.p + fit.order.q).toBeLessThanOrEqual(1);
    [...fit.ar, ...fit.ma].forEach((c) => expect(Math.abs(c)).toBeLessThan(0.15));
    expect(Math.abs(fit.mu - 50)).toBeLessThan(0.3);
  });
});

describe('benchmarks and Theta', () => {
  const y = [3, 5, 4, 6, 8, 7, 9, 11, 10, 12];
  test('naive, seasonal naive and drift', () => {
    expect(fitNaive(y).predict(2).mean).toEqual([12, 12]);
    expect(fitSeasonalNaive(y, 3).predict(4).mean).toEqual([11, 10, 12, 11]);
    const d = fitDrift(y).predict(2).mean;
    expect(d[0]).toBeCloseTo(13, 10);
    expect(d[1]).toBeCloseTo(14, 10);
  });
  test('Theta extrapolates a linear trend', () => {
    const lin = Array.from({ length: 40 }, (_, t) => 10 + 3 * t + Math.sin(t));
    const fc = autoTheta(lin).predict(5).mean;
    fc.forEach((v, k) => expect(Math.abs(v - (10 + 3 * (40 + k)))).toBeLessThan(4));
  });
});
