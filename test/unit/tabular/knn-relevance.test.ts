import { loadModel, predictRows, serialiseModel, trainTabular, type Row } from '../../../engines/tabular/index';
import { categoryRuleFor, prepare } from '../../../engines/tabular/pipeline';
import { DEFAULT_KNN_OPTIONS, featureRelevance, fitKnnOof, fitSpace, knnPart, neighbourLists, neighbourListsAmong, predictKnn, toSpace, weighSpace } from '../../../engines/tabular/knn';
import { Prng } from '../../../engines/tabular/prng';

/** A binary target on x0 and x1 only, with 6 noise columns and a text column that carries the sign of x0 in part, missing values. */
function rows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  return Array.from({ length: n }, (_, i) => {
    const x = Array.from({ length: 8 }, () => rng.nextFloat() * 2 - 1);
    const row: Record<string, unknown> = { target: x[0] + 0.7 * x[1] + 0.3 * (rng.nextFloat() - 0.5) > 0 ? 'yes' : 'no', tag: x[0] > 0 ? (rng.nextInt(4) ? 'p' : 'q') : rng.nextInt(4) ? 'q' : 'p' };
    x.forEach((v, j) => (row[`x${j}`] = i % 19 === j ? null : v));
    return row as Row;
  });
}

const WEIGHED = { ...DEFAULT_KNN_OPTIONS, relevance: [0, 1] };

/** The twentieth round's experiment option KnnOptions.relevance: a metric weighing features by their univariate relevance. */
describe('kNN member with a relevance-weighed metric (experiments)', () => {
  it('weighs informative features above noise, within [0, 1]; power 0 is the plain metric', () => {
    const p = prepare(rows(400, 1), 'target', 'classification', categoryRuleFor('17.0.0'));
    const space = fitSpace(p.X, p.n, p.F, p.categorical, 1);
    const Z = toSpace(space, p.X, p.n, p.F);
    const all = Int32Array.from({ length: p.n }, (_, i) => i);
    const r = featureRelevance(space, Z, p.F, all, p.y);
    const name = (f: number): string => p.analysis.features[f].name;
    const at = (c: string): number => r[p.analysis.features.findIndex((f) => f.name === c)];
    for (let f = 0; f < p.F; f++) {
      expect(r[f]).toBeGreaterThanOrEqual(0);
      expect(r[f]).toBeLessThanOrEqual(1);
      if (/^x[2-7]$/.test(name(f))) expect(r[f]).toBeLessThan(Math.min(at('x0'), at('x1'), at('tag')));
    }
    const plain = weighSpace(space, r, 0);
    expect(Array.from(plain.scale)).toEqual(Array.from(space.scale));
    expect(Array.from(plain.fill)).toEqual(Array.from(space.fill));
    const w = weighSpace(space, r, 1);
    for (let f = 0; f < p.F; f++) expect(Math.abs(w.scale[f])).toBeLessThanOrEqual(Math.abs(space.scale[f]) + 1e-15);
  });

  it('searches neighbours among a pool: the full lists with the other rows struck out', () => {
    const p = prepare(rows(90, 2), 'target', 'classification', categoryRuleFor('17.0.0'));
    const space = fitSpace(p.X, p.n, p.F, p.categorical, 1);
    const Z = toSpace(space, p.X, p.n, p.F);
    const pool = Int32Array.from({ length: p.n }, (_, i) => i).filter((i) => i % 3 !== 0);
    const inPool = new Uint8Array(p.n);
    for (const j of pool) inPool[j] = 1;
    const full = neighbourLists(space, Z, p.n, p.F, p.n);
    const among = neighbourListsAmong(space, Z, p.n, p.F, 11, pool);
    expect(among.L).toBe(11);
    for (let i = 0; i < p.n; i++) {
      const want: number[] = [];
      for (let t = 0; t < full.L && want.length < 11; t++) if (inPool[full.idx[i * full.L + t]]) want.push(full.idx[i * full.L + t]);
      expect(Array.from(among.idx.subarray(i * 11, i * 11 + 11))).toEqual(want);
    }
  });

  it('never uses a row\'s own target for its fold\'s out-of-fold outputs (weights, k and metric from the other folds), deterministically', () => {
    const p = prepare(rows(240, 3), 'target', 'classification', categoryRuleFor('17.0.0'));
    const folds = [0, 1, 2].map((f) => Int32Array.from({ length: p.n }, (_, i) => i).filter((i) => i % 3 === f));
    const base = fitKnnOof(p.X, p.n, p.F, p.categorical, p.y, folds, WEIGHED);
    expect(base.foldPowers).toHaveLength(3);
    const again = fitKnnOof(p.X, p.n, p.F, p.categorical, p.y, folds, WEIGHED);
    expect(Array.from(again.oofOut)).toEqual(Array.from(base.oofOut));
    for (const i of [0, 5, 118, 239]) {
      const y = Float64Array.from(p.y);
      y[i] = 1 - y[i];
      const flipped = fitKnnOof(p.X, p.n, p.F, p.categorical, y, folds, WEIGHED);
      for (let j = i % 3; j < p.n; j += 3) expect(flipped.oofOut[j * 2 + 1]).toBe(base.oofOut[j * 2 + 1]);
    }
    // the model's part stores its rows in the weighed space its scales describe
    const part = knnPart(base, p.n, p.F, p.y, WEIGHED, 0.4);
    const stored = toSpace(part, p.X, p.n, p.F);
    expect(Array.from(part.Z)).toEqual(Array.from(stored));
    const out = predictKnn(part, p.X, p.n, p.F);
    for (let i = 0; i < p.n; i++) expect(out[i * 2] + out[i * 2 + 1]).toBeCloseTo(1, 12);
  });

  it('trains through config.knn and round-trips bit for bit in the same artefact format', () => {
    const data = rows(300, 4);
    const options = { target: 'target', task: 'classification' as const, seed: 1, engineVersion: '17.0.0' as const, config: { maxRounds: 8, folds: 3, models: 3, knn: { relevance: [0, 1], minGain: 0 } } };
    const a = trainTabular(data, options).model;
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(data, options).model)).toBe(text);
    expect(JSON.parse(text).formatVersion).toBe(5);
    const back = loadModel(text);
    const query = rows(40, 5);
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });
});
