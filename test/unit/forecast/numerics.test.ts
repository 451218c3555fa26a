/**
 * The arithmetic of forecast-auto 1.6.0's cheaper kernels against the textbook recursions they
 * replace: the same values within rounding, and the optimiser's values-only stop.
 */
import { nelderMead, VALUES_STOP_MIN_POINTS } from '../../../engines/forecast/math';
import { fitArima } from '../../../engines/forecast/models/arima';
import { candidateSpecs, etsFilter, fitEtsSpec, type EtsParams, type EtsSpec } from '../../../engines/forecast/models/ets';
import { fitTheta, thetaFilter } from '../../../engines/forecast/models/theta';
import { normals } from './helpers';

/** ETS as 1.5.0 wrote it: ℓ̂ + α r (r / s for a multiplicative season) and Σ log|ŷ| term by term. */
function referenceEts(y: number[], spec: EtsSpec, m: number, p: EtsParams): { lik: number; level: number; trend: number; season: number[]; residuals: number[] } {
  const n = y.length;
  let l = p.l0;
  let b = spec.trend === 'N' ? 0 : p.b0;
  const phi = spec.trend === 'Ad' ? p.phi : 1;
  const s = spec.season === 'N' ? [] : p.s0.slice();
  const residuals: number[] = [];
  let sse = 0, sseRel = 0, sumLog = 0;
  for (let t = 0; t < n; t++) {
    const k = t % m;
    const lt1 = l + phi * b;
    const si = spec.season === 'N' ? 0 : s[k];
    const yhat = spec.season === 'M' ? lt1 * si : lt1 + si;
    const r = y[t] - yhat;
    residuals.push(r);
    sse += r * r;
    sseRel += (r / yhat) ** 2;
    sumLog += Math.log(Math.abs(yhat));
    if (spec.season === 'M') {
      l = lt1 + (p.alpha * r) / si;
      b = phi * b + (p.beta * r) / si;
      s[k] = si + (p.gamma * r) / lt1;
    } else {
      l = lt1 + p.alpha * r;
      b = phi * b + p.beta * r;
      if (spec.season === 'A') s[k] = si + p.gamma * r;
    }
  }
  const lik = spec.error === 'A' ? n * Math.log(sse / n) : n * Math.log(sseRel / n) + 2 * sumLog;
  return { lik, level: l, trend: b, season: s, residuals };
}

function close(a: number, b: number, rel: number): boolean {
  return Math.abs(a - b) <= rel * Math.max(1, Math.abs(a), Math.abs(b));
}

describe('ETS filter (1.6.0: states as linear maps, Σ log|ŷ| through a running product)', () => {
  const z = normals(7);
  const m = 7;
  const base = Array.from({ length: 200 }, (_, t) => 100 + 0.3 * t + [0, 3, 5, 2, 8, 12, 6][t % m] + 2 * z());
  const seasonM = [0.97, 0.99, 1.0, 0.98, 1.03, 1.06, 0.97];
  const seasonA = [-3, -1, 0, -2, 3, 6, -3];

  for (const [label, scale] of [['values about 100', 1], ['values about 1e120 (each |ŷ| logged alone)', 1e118], ['values about 1e-6', 1e-8]] as const) {
    test(`every candidate spec, ${label}: likelihood, final states and residuals as the textbook recursions`, () => {
      const y = base.map((v) => v * scale);
      for (const spec of candidateSpecs(m, true, true)) {
        const p: EtsParams = { alpha: 0.3, beta: 0.05, gamma: 0.1, phi: 0.95, l0: 100 * scale, b0: 0.3 * scale, s0: spec.season === 'M' ? seasonM : seasonA.map((v) => v * scale) };
        const run = etsFilter(y, spec, m, p);
        const ref = referenceEts(y, spec, m, p);
        expect(run.ok).toBe(true);
        expect(close(run.lik, ref.lik, 1e-10)).toBe(true);
        expect(close(run.level, ref.level, 1e-10)).toBe(true);
        expect(Math.abs(run.trend - ref.trend)).toBeLessThanOrEqual(1e-10 * Math.abs(ref.level));
        run.season.forEach((v, i) => expect(Math.abs(v - ref.season[i])).toBeLessThanOrEqual(1e-10 * (spec.season === 'M' ? 1 : Math.abs(ref.level))));
        run.residuals.forEach((v, i) => expect(Math.abs(v - ref.residuals[i])).toBeLessThanOrEqual(1e-9 * Math.abs(y[i])));
      }
    });
  }

  test('a series whose running product of |ŷ| would leave the double range keeps a finite likelihood', () => {
    // 400 steps of |ŷ| ≈ 1e90 (product 1e36000) and 400 of ≈ 1e-9 (product 1e-3600)
    for (const level of [1e90, 1e-9]) {
      const y = Array.from({ length: 400 }, (_, t) => level * (1 + 0.01 * Math.sin(t)));
      const spec: EtsSpec = { error: 'M', trend: 'N', season: 'N' };
      const p: EtsParams = { alpha: 0.2, beta: 0, gamma: 0, phi: 1, l0: level, b0: 0, s0: [] };
      const run = etsFilter(y, spec, 1, p);
      const ref = referenceEts(y, spec, 1, p);
      expect(Number.isFinite(run.lik)).toBe(true);
      expect(close(run.lik, ref.lik, 1e-10)).toBe(true);
    }
  });
});

describe('Theta filter (1.6.0: (1 − α)^i as running products)', () => {
  test('residuals and MSE as with Math.pow powers', () => {
    const z = normals(3);
    const y = Array.from({ length: 300 }, (_, t) => 50 + 0.2 * t + 3 * z());
    for (const v of ['STM', 'OTM', 'DSTM', 'DOTM'] as const) {
      for (const alpha of [0.1, 0.5, 0.99]) {
        const run = thetaFilter(y, v, 48, alpha, 2.5);
        // the reference: the same recursion with Math.pow for every power
        let level = alpha * y[0] + (1 - alpha) * 48;
        let meanY = y[0];
        let A: number, B: number;
        if (v === 'DSTM' || v === 'DOTM') {
          A = y[0];
          B = 0;
        } else {
          const n = y.length;
          let sTy = 0, sY = 0;
          for (let i = 0; i < n; i++) {
            sTy += (i + 1) * y[i];
            sY += y[i];
          }
          B = (6 * ((2 * sTy) / n - ((1 + n) * sY) / n)) / (n * n - 1);
          A = sY / n - ((n + 1) * B) / 2;
        }
        let sse = 0;
        for (let i = 1; i < y.length; i++) {
          const mu = level + (1 - 1 / 2.5) * (A * Math.pow(1 - alpha, i) + (B * (1 - Math.pow(1 - alpha, i + 1))) / alpha);
          const prevMean = meanY;
          level = alpha * y[i] + (1 - alpha) * level;
          meanY = (i * prevMean + y[i]) / (i + 1);
          if (v === 'DSTM' || v === 'DOTM') {
            B = ((i - 1) * B + (6 * (y[i] - prevMean)) / (i + 1)) / (i + 2);
            A = meanY - (B * (i + 2)) / 2;
          }
          expect(Math.abs(run.residuals[i] - (y[i] - mu))).toBeLessThanOrEqual(1e-9 * Math.abs(y[i]));
          if (i >= 3) sse += (y[i] - mu) ** 2;
        }
        expect(close(run.mse, sse / (y.length - 3), 1e-9)).toBe(true);
      }
    }
  });
});

describe('Nelder–Mead values-only stop', () => {
  // a valley flat along x[1] near the optimum, as a likelihood whose parameter no longer matters
  const f = (x: number[]) => 100 + (x[0] - 1) ** 2 + 1e-9 * (x[1] - 3) ** 2;

  test('stops once the values agree, at the same optimum value; the default still asks the coordinates to agree', () => {
    const full = nelderMead(f, [0, 0], { maxIter: 2000, tol: 1e-10 });
    const early = nelderMead(f, [0, 0], { maxIter: 2000, tol: 1e-10, valuesOnly: true });
    expect(early.iterations).toBeLessThan(full.iterations);
    expect(Math.abs(early.fx - full.fx)).toBeLessThanOrEqual(1e-6);
    expect(Math.abs(early.x[0] - 1)).toBeLessThan(1e-3);
  });

  test('without valuesOnly the search is 1.5.0\'s to the last bit (results pinned from 1.5.0\'s optimiser)', () => {
    expect(nelderMead(f, [0, 0], { maxIter: 500, tol: 1e-8 })).toEqual({ x: [1.0000111009910029, 0.18662847946246863], fx: 100.0000000080383, iterations: 39 });
    // bounds, a penalty wall and a ripple
    const g = (x: number[]) => (x[1] > x[0] ? 1e300 : 50 + (x[0] - 0.9) ** 2 + 4 * (x[1] - 0.9) ** 2 + Math.sin(5 * x[0]) * 0.01);
    expect(nelderMead(g, [0.5, 0.05], { lower: [1e-4, 1e-4], upper: [0.9999, 0.9999], maxIter: 240, tol: 1e-7, step: [0.1, 0.1] }))
      .toEqual({ x: [0.9999, 0.9000013029287905], fx: 50.00038935014795, iterations: 35 });
  });
});

describe('values-only stop from VALUES_STOP_MIN_POINTS points (1.6.0)', () => {
  const z = normals(11);
  const series = (n: number) => Array.from({ length: n }, (_, t) => 200 + 0.5 * t + 8 * Math.sin((2 * Math.PI * t) / 4) + 3 * z());

  test('by default each model decides from its own length; an explicit choice overrides it', () => {
    expect(VALUES_STOP_MIN_POINTS).toBe(100);
    const short = series(60), long = series(160);
    const spec: EtsSpec = { error: 'M', trend: 'Ad', season: 'M' };
    expect(fitEtsSpec(short, spec, 4)!.params).toEqual(fitEtsSpec(short, spec, 4, 'decompose', false)!.params);
    expect(fitEtsSpec(long, spec, 4)!.params).toEqual(fitEtsSpec(long, spec, 4, 'decompose', true)!.params);
    expect(fitTheta(short, 'DOTM')!.alpha).toBe(fitTheta(short, 'DOTM', undefined, false)!.alpha);
    expect(fitTheta(long, 'DOTM')!.theta).toBe(fitTheta(long, 'DOTM', undefined, true)!.theta);
    const order = { p: 2, d: 1, q: 1, P: 0, D: 0, Q: 0, m: 1, constant: false };
    expect(fitArima(short, order)!.ar).toEqual(fitArima(short, order, false)!.ar);
    expect(fitArima(long, order)!.ar).toEqual(fitArima(long, order, true)!.ar);
    // the two stops are different searches (a short series forced to the values-only stop moves)
    expect(fitEtsSpec(short, spec, 4, 'decompose', true)!.params).not.toEqual(fitEtsSpec(short, spec, 4, 'decompose', false)!.params);
  });
});
