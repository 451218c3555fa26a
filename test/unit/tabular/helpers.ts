import { fitBins, transformBins } from '../../../engines/tabular/binning';
import { Prng } from '../../../engines/tabular/prng';
import { loadModel, predictRows, serialiseModel, trainTabular, type EngineConfigOverride, type EngineVersion, type Row } from '../../../engines/tabular/index';

/** Rows with a genuine signal: target depends on x1, x2 and the category. */
export function signalRows(n: number, seed: number, kind: 'binary' | 'multiclass' | 'regression' = 'binary'): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const x1 = rng.nextFloat() * 10;
    const x2 = rng.nextFloat() * 10;
    const color = ['red', 'green', 'blue'][rng.nextInt(3)];
    const noise = rng.nextFloat() * 4 - 2;
    const z = x1 - x2 + (color === 'red' ? 3 : 0) + noise;
    let target: unknown;
    if (kind === 'binary') target = z > 1 ? 'yes' : 'no';
    else if (kind === 'multiclass') target = z < -2 ? 'low' : z < 3 ? 'mid' : 'high';
    else target = z * 2 + 5;
    rows.push({ x1, x2: rng.nextFloat() < 0.1 ? null : x2, color, x3: rng.nextFloat(), target });
  }
  return rows;
}

/**
 * Binned grower inputs with gradients and hessians: numeric columns with and without missing values,
 * one categorical column of `categories` values with missing values.
 */
export function binnedGradients(seed: number, n: number, categories: number) {
  const rng = new Prng(seed);
  const F = 5;
  const X = new Float64Array(n * F);
  const g = new Float64Array(n);
  const h = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < 2; f++) X[i * F + f] = rng.nextFloat() < 0.15 ? NaN : Math.round(rng.nextFloat() * 60);
    X[i * F + 2] = rng.nextFloat() * 100;
    X[i * F + 3] = Math.round(rng.nextFloat() * 8);
    X[i * F + 4] = rng.nextFloat() < 0.1 ? NaN : rng.nextInt(categories);
    const a = Number.isNaN(X[i * F]) ? 20 : X[i * F];
    g[i] = (a > 25 ? 1 : -0.5) + (X[i * F + 2] > 60 ? 0.4 : 0) + (X[i * F + 4] === 2 ? 0.7 : 0) + (rng.nextFloat() - 0.5);
    h[i] = 0.5 + rng.nextFloat();
  }
  const info = fitBins(X, n, F, [0, 0, 0, 0, categories], 255, 1);
  return { F, g, h, info, bins: transformBins(info, X, n, F) };
}

/**
 * Trains `version` twice with one seed on 240 rows of `kind` and checks that both give the same artefact,
 * in artefact format `format`, which loads as that version, re-serialises to itself and predicts 60 new
 * rows exactly as the trained model does.
 */
export function expectDeterministicRoundTrip(version: EngineVersion, kind: 'binary' | 'multiclass' | 'regression', format: number, config: EngineConfigOverride): void {
  const rows = signalRows(240, 12, kind);
  const test = signalRows(60, 13, kind);
  const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 4, engineVersion: version, config };
  const a = trainTabular(rows, options);
  const b = trainTabular(rows, options);
  const text = serialiseModel(a.model);
  expect(serialiseModel(b.model)).toBe(text);
  expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(format);
  const back = loadModel(text);
  expect(back.engine).toEqual({ id: 'tabular-gbdt', version });
  expect(serialiseModel(back)).toBe(text);
  expect(predictRows(back, test)).toEqual(predictRows(a.model, test));
}

/**
 * Binary probabilities n x 2 that lean towards each row's class: P(class 1) = 0.5 ± `margin` (+ for
 * class 1) plus uniform noise of width `scale`, clipped to [0.02, 0.98]; NaN rows where `missing` says
 * (no draw taken for them).
 */
export function noisyProbabilities(y: Float64Array, margin: number, scale: number, rng: Prng, missing: (i: number) => boolean = () => false): Float64Array {
  const out = new Float64Array(y.length * 2);
  for (let i = 0; i < y.length; i++) {
    const p = missing(i) ? NaN : Math.min(0.98, Math.max(0.02, 0.5 + (y[i] ? margin : -margin) + scale * (rng.nextFloat() - 0.5)));
    out[i * 2] = 1 - p;
    out[i * 2 + 1] = p;
  }
  return out;
}

/**
 * Rows that share their record's outcome: `n` rows of 300 records (a unit of 20 and a shift of 15,
 * neither alone telling the outcome), each record's class drawn once and its rows labelled with it 90 %
 * of the time, plus a numeric column of noise. `querySeed` draws new rows of the same records.
 */
export function groupedRows(n: number, seed: number, querySeed?: number): Row[] {
  const records = new Prng(seed);
  const outcome = Array.from({ length: 300 }, () => (records.nextFloat() < 0.5 ? 'yes' : 'no'));
  const rng = new Prng(querySeed ?? seed + 1000);
  return Array.from({ length: n }, () => {
    const r = rng.nextInt(300);
    const target = rng.nextFloat() < 0.9 ? outcome[r] : outcome[r] === 'yes' ? 'no' : 'yes';
    return { unit: `u${r % 20}`, shift: `s${Math.floor(r / 20)}`, level: rng.nextFloat(), target };
  });
}
