import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { basisMatrix, fitBasis, fitLinear, DEFAULT_LINEAR_OPTIONS, TERM_CODE, TERM_HINGE, TERM_LINEAR, TERM_MISSING } from '../../../engines/tabular/linear';
import { makeLoss } from '../../../engines/tabular/loss';
import { addLinearMember, categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { makeFolds, type EngineConfigOverride } from '../../../engines/tabular/train';
import { Prng } from '../../../engines/tabular/prng';
import type { Row } from '../../../engines/tabular/index';
import { signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** A smooth, purely linear regression: y = 3 x1 - 2 x2 + 0.5 x3 + small noise, plus a missing value now and then. */
function linearRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const x1 = rng.nextFloat() * 4 - 2;
    const x2 = rng.nextFloat() * 4 - 2;
    const x3 = rng.nextFloat() * 4 - 2;
    rows.push({ x1, x2, x3: i % 13 === 0 ? null : x3, target: 3 * x1 - 2 * x2 + 0.5 * x3 + (rng.nextFloat() - 0.5) * 0.2 });
  }
  return rows;
}

function foldRows(n: number, k: number, seed: number): Int32Array[] {
  const f = makeFolds(new Float64Array(n), k, seed, 0);
  return Array.from({ length: k }, (_, j) => Int32Array.from([...f.keys()].filter((i) => f[i] === j)));
}

describe('engine 6: the linear member', () => {
  it('builds the basis from the features only: standardised numerics, missing indicators, hinges, category codes', () => {
    const X = Float64Array.from([1, 0, 2, 1, NaN, 2, 3, 0, 4, 1, 5, NaN]); // 6 rows x 2 features
    const b = fitBasis(X, 6, 2, [0, 2], 1);
    const kinds = Array.from(b.termKind);
    expect(kinds).toEqual([TERM_LINEAR, TERM_MISSING, TERM_HINGE, TERM_CODE, TERM_CODE]);
    const Z = basisMatrix(b, X, 6, 2);
    const D = kinds.length;
    // the standardised column has mean 0; the missing row is filled with the median and flagged
    let m = 0;
    for (let i = 0; i < 6; i++) m += Z[i * D] / 6;
    expect(Math.abs(m)).toBeLessThan(1e-12);
    expect(Z[2 * D + 1]).toBe(1);
    expect(Z[3 * D + 3]).toBe(1); // code 0
    expect(Z[5 * D + 3] + Z[5 * D + 4]).toBe(0); // missing category: no code term
  });

  it('recovers a linear regression on known data', () => {
    const p = prepare(linearRows(300, 1), 'target', 'regression');
    const basis = fitBasis(p.X, p.n, p.F, p.categorical, 0);
    const D = basis.termFeature.length;
    const Z = basisMatrix(basis, p.X, p.n, p.F);
    const fit = fitLinear(Z, p.n, D, p.y, 'regression', 0, foldRows(p.n, 5, 3), { ...DEFAULT_LINEAR_OPTIONS, alphas: [0.0001] });
    expect(fit).not.toBeNull();
    // slopes per original unit: coefficient / scale
    const slope = (f: number): number => {
      const d = [...basis.termFeature].findIndex((g, j) => g === f && basis.termKind[j] === TERM_LINEAR);
      return (fit?.coef[d] ?? 0) / basis.numScale[f];
    };
    expect(slope(0)).toBeCloseTo(3, 1);
    expect(slope(1)).toBeCloseTo(-2, 1);
    expect(slope(2)).toBeCloseTo(0.5, 1);
    let sse = 0;
    for (let i = 0; i < p.n; i++) sse += (fit!.oofRaw[i] - p.y[i]) ** 2;
    expect(Math.sqrt(sse / p.n)).toBeLessThan(0.2);
  });

  it.each(['binary', 'multiclass'] as const)('fits an L2 %s logistic model whose out-of-fold loss beats the prior', (kind) => {
    const p = prepare(signalRows(300, 4, kind), 'target', 'classification');
    const basis = fitBasis(p.X, p.n, p.F, p.categorical, 0);
    const D = basis.termFeature.length;
    const fit = fitLinear(basisMatrix(basis, p.X, p.n, p.F), p.n, D, p.y, p.task, p.nClasses, foldRows(p.n, 5, 3), DEFAULT_LINEAR_OPTIONS);
    expect(fit).not.toBeNull();
    const K = p.task === 'multiclass' ? p.nClasses : 1;
    const loss = makeLoss(K > 1 ? 'softmax' : 'log_loss', K, p.y);
    const init = loss.initScores(p.y);
    const prior = new Float64Array(p.n * K);
    for (let i = 0; i < p.n; i++) for (let k = 0; k < K; k++) prior[i * K + k] = init[k];
    expect(loss.loss(p.y, fit!.oofRaw)).toBeLessThan(0.6 * loss.loss(p.y, prior));
  });

  it('never lets a row\'s own target into its out-of-fold score', () => {
    const p = prepare(linearRows(120, 2), 'target', 'regression');
    const basis = fitBasis(p.X, p.n, p.F, p.categorical, 3);
    const D = basis.termFeature.length;
    const Z = basisMatrix(basis, p.X, p.n, p.F);
    const folds = foldRows(p.n, 5, 1);
    const opts = { ...DEFAULT_LINEAR_OPTIONS, alphas: [0.01] };
    const a = fitLinear(Z, p.n, D, p.y, 'regression', 0, folds, opts);
    const y2 = p.y.slice();
    const row = folds[2][0];
    y2[row] += 1000;
    const b = fitLinear(Z, p.n, D, y2, 'regression', 0, folds, opts);
    expect(b!.oofRaw[row]).toBe(a!.oofRaw[row]);
    // the other folds' rows did see it
    expect(b!.oofRaw[folds[0][0]]).not.toBe(a!.oofRaw[folds[0][0]]);
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) blends with weights summing to one, never worse out of fold than the better member', (kind) => {
    const p = prepare(kind === 'regression' ? linearRows(200, 5) : signalRows(200, 5, kind), 'target', kind === 'regression' ? 'regression' : 'classification', categoryRuleFor('5.0.0'));
    const r = trainPrepared(p, { engineVersion: '5.0.0', seed: 1, config: FAST });
    const lin = addLinearMember(p, r.core);
    expect(lin.weights).toBeDefined();
    const w = lin.weights as Float64Array;
    expect(w.every((v) => v >= 0)).toBe(true);
    expect(w[0] + w[1]).toBeCloseTo(1, 12);
    const K = p.task === 'multiclass' ? p.nClasses : 1;
    const loss = makeLoss(r.core.lossName, K, p.y);
    const held = [...Array(p.n).keys()].filter((i) => !Number.isNaN(r.core.oofRaw[i * K]));
    const sub = (o: Float64Array): Float64Array => Float64Array.from(held.flatMap((i) => Array.from(o.subarray(i * K, i * K + K))));
    const yh = Float64Array.from(held, (i) => p.y[i]);
    const treeLoss = loss.loss(yh, sub(r.core.oofRaw));
    expect(loss.loss(yh, sub(lin.core.oofRaw))).toBeLessThanOrEqual(treeLoss + 1e-12);
    if (kind === 'regression') {
      // on a purely linear target the linear member takes (almost) all the weight
      expect(w[1]).toBeGreaterThan(0.5);
      expect(lin.part).toBeDefined();
    }
  });

  it('is deterministic for a seed, keeps 5.0.0\'s trees, and round-trips through a format-2 artefact bit for bit', () => {
    const rows = linearRows(240, 7);
    const test = linearRows(60, 8);
    const a = trainTabular(rows, { target: 'target', task: 'regression', seed: 3, engineVersion: '6.0.0', config: FAST });
    const b = trainTabular(rows, { target: 'target', task: 'regression', seed: 3, engineVersion: '6.0.0', config: FAST });
    const v5 = trainTabular(rows, { target: 'target', task: 'regression', seed: 3, engineVersion: '5.0.0', config: FAST });
    expect(serialiseModel(a.model)).toBe(serialiseModel(b.model));
    expect(a.model.engine).toEqual({ id: 'tabular-gbdt', version: '6.0.0' });
    expect(a.model.linear).toBeDefined();
    expect(JSON.stringify(a.model.predictor)).toBe(JSON.stringify(v5.model.predictor));
    const text = serialiseModel(a.model);
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(2);
    const back = loadModel(text);
    expect(serialiseModel(back)).toBe(text);
    expect(predictRows(back, test)).toEqual(predictRows(a.model, test));
    // better than 5.0.0 on a linear target
    const err = (m: typeof a.model): number => {
      const pr = predictRows(m, test);
      return pr.reduce((s, q, i) => s + ((q.prediction as number) - (test[i].target as number)) ** 2, 0);
    };
    expect(err(a.model)).toBeLessThan(err(v5.model));
  });

  it('skips the member on a wide table of few rows, whose basis has more than maxTerms terms (a cubic-cost fit)', () => {
    const rng = new Prng(17);
    // 60 rows of 150 numeric columns: 600 basis terms (each column linear plus 3 hinges), within the
    // classification budget of rows x terms (36,000 of 300,000) but over the 512 terms
    const rows: Row[] = Array.from({ length: 60 }, () => {
      const row: Row = {};
      let signal = 0;
      for (let f = 0; f < 150; f++) {
        const x = rng.nextFloat();
        row[`x${f}`] = x;
        if (f < 3) signal += x;
      }
      return { ...row, target: signal > 1.5 ? 'a' : 'b' };
    });
    const p = prepare(rows, 'target', 'classification', categoryRuleFor('5.0.0'));
    const { core } = trainPrepared(p, { engineVersion: '5.0.0', seed: 1, config: FAST });
    expect(DEFAULT_LINEAR_OPTIONS.maxTerms).toBe(512);
    expect(fitBasis(p.X, p.n, p.F, p.categorical, DEFAULT_LINEAR_OPTIONS.hinges).termFeature.length).toBe(600);
    const skipped = addLinearMember(p, core);
    expect(skipped.weights).toBeUndefined();
    expect(skipped.core).toBe(core);
    // the term budget is what skips it: with room for 600 terms the member is fitted and blended
    expect(addLinearMember(p, core, { maxTerms: 600 }).weights).toBeDefined();
    expect(trainTabular(rows, { target: 'target', seed: 1, engineVersion: '7.0.0', config: FAST }).model.linear).toBeUndefined();
  });

  it('writes 5.0.0\'s artefact but for the version and format 2 when the linear member is not fitted', () => {
    // the member not fitted (a compute budget of zero): the trees alone, as 5.0.0's
    const rng = new Prng(11);
    const rows: Row[] = Array.from({ length: 200 }, () => {
      const x = rng.nextFloat();
      return { x, other: rng.nextFloat(), target: x > 0.5 ? 'a' : 'b' };
    });
    const a = trainTabular(rows, { target: 'target', seed: 1, engineVersion: '6.0.0', config: { ...FAST, linear: { maxWork: 0, maxGramWork: 0 } } });
    const v5 = trainTabular(rows, { target: 'target', seed: 1, engineVersion: '5.0.0', config: FAST });
    expect(a.model.linear).toBeUndefined();
    const text = serialiseModel(a.model);
    expect(text).toBe(serialiseModel({ ...v5.model, engine: { ...v5.model.engine, version: '6.0.0' }, formatVersion: 2 }));
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(2);
    expect(serialiseModel(loadModel(text))).toBe(text);
    expect(loadModel(text).linear).toBeUndefined();
  });

  it('is trainable by name, not the default (over the fit-time goal; 18.0.0 is), writes artefact format 2 and is servable', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    // 17.0.0 writes format 5; 6.0.0's models stay in format 2 (below)
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    expect(canServe('tabular-gbdt', '6.0.0')).toBe(true);
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST }).model.engine.version).toBe('19.0.0');
    expect(trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '6.0.0' }).model.engine.version).toBe('6.0.0');
  });

  it.each(['binary', 'multiclass'] as const)('(%s) round-trips a classification model with a linear part bit for bit', (kind) => {
    const rows = signalRows(240, 12, kind);
    const test = signalRows(60, 13, kind);
    const a = trainTabular(rows, { target: 'target', seed: 2, engineVersion: '6.0.0', config: FAST });
    expect(a.model.linear).toBeDefined();
    const back = loadModel(serialiseModel(a.model));
    expect(predictRows(back, test)).toEqual(predictRows(a.model, test));
  });
});
