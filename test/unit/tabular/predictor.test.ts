import { predictRawCompiled, predictRawFast } from '../../../engines/tabular/compiled';
import { trainTabular, type Row } from '../../../engines/tabular/index';
import { encodeForModel } from '../../../engines/tabular/model';
import { predictRaw, predictRawBlocked } from '../../../engines/tabular/predictor';
import { Prng } from '../../../engines/tabular/prng';

describe('flat predictor and its accelerated paths', () => {
  it('compiled, blocked and reference traversal give bit-identical raw scores (numeric, categorical, missing)', () => {
    const rng = new Prng(21);
    const mk = (n: number): Row[] =>
      Array.from({ length: n }, () => {
        const a = rng.nextFloat();
        const c = ['x', 'y', 'z', 'w', 'v', 'u'][rng.nextInt(6)];
        return {
          a: rng.nextFloat() < 0.15 ? null : a,
          b: rng.nextFloat() * 5,
          c: rng.nextFloat() < 0.1 ? null : c,
          target: ['p', 'q', 'r'][(a > 0.5 ? 1 : 0) + (c === 'x' || c === 'u' ? 1 : 0)],
        };
      });
    const t = trainTabular(mk(400), { target: 'target', seed: 1, config: { maxRounds: 60, folds: 2, models: 2 } });
    const rows = mk(1000).concat([{ a: null, b: null, c: 'never-seen' }, {}]);
    const X = encodeForModel(t.model, rows);
    const ref = predictRaw(t.model.predictor, X, rows.length);
    const blocked = predictRawBlocked(t.model.predictor, X, rows.length);
    const compiled = predictRawCompiled(t.model.predictor, X, rows.length) as Float64Array;
    expect(compiled).not.toBeNull();
    const same = (a: Float64Array, b: Float64Array): boolean => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
    expect(same(ref, blocked)).toBe(true);
    expect(same(ref, compiled)).toBe(true);
    expect(same(ref, predictRawFast(t.model.predictor, X, rows.length, 1))).toBe(true);
    expect(Array.from(t.model.predictor.nodeFlags).some((f) => (f & 2) === 2)).toBe(true);
  });
});
