import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE, type Row } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { fitGroupTable, groupOofs, mixGroup, searchGroupKey, DEFAULT_GROUP_OPTIONS } from '../../../engines/tabular/group';
import { categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, groupedRows, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** An encoded matrix of F columns from column arrays. */
function matrix(columns: number[][]): Float64Array {
  const n = columns[0].length;
  const F = columns.length;
  const X = new Float64Array(n * F);
  for (let i = 0; i < n; i++) for (let f = 0; f < F; f++) X[i * F + f] = columns[f][i];
  return X;
}

describe('the group member\'s statistics', () => {
  it('give a held row the smoothed statistic of its group outside its fold, never its own target', () => {
    // one group of four rows in four folds; y = 1, 0, 0, 0
    const folds = Int32Array.of(0, 1, 2, 3);
    const out = groupOofs(new Int32Array(4), 1, Float64Array.of(1, 0, 0, 0), folds, 4, 2, false, [1])[0];
    const prior = 0.25;
    // row 0 (class 1) sees three rows of class 0: P(1) = (0 + 1 * prior) / (3 + 1)
    expect(out[1]).toBeCloseTo(prior / 4, 12);
    // rows 1-3 see one row of class 1 and two of class 0
    for (const i of [1, 2, 3]) expect(out[i * 2 + 1]).toBeCloseTo((1 + prior) / 4, 12);
    // without smoothing, row 0's statistic is the same whatever its own class; the others' follow it
    const own1 = groupOofs(new Int32Array(4), 1, Float64Array.of(1, 0, 0, 0), folds, 4, 2, false, [0])[0];
    const own0 = groupOofs(new Int32Array(4), 1, Float64Array.of(0, 0, 0, 0), folds, 4, 2, false, [0])[0];
    expect(own1[1]).toBe(0);
    expect(own0[1]).toBe(0);
    expect(own1[3]).toBeCloseTo(1 / 3, 12);
    expect(own0[3]).toBe(0);
  });

  it('leave rows outside every fold without a statistic, but count their targets for the others', () => {
    const y = Float64Array.of(2, 4, 6);
    const out = groupOofs(new Int32Array(3), 1, y, Int32Array.of(0, -1, -1), 1, 1, true, [0])[0];
    expect(out[0]).toBe(5);
    expect(Number.isNaN(out[1]) && Number.isNaN(out[2])).toBe(true);
  });

  it('find the combination of columns that names the record, and not a noise column', () => {
    // 300 records of (a, b) with 4 rows each; a and b alone say little, a noise column nothing
    const rng = new Prng(7);
    const a: number[] = [];
    const b: number[] = [];
    const noise: number[] = [];
    const yv: number[] = [];
    const level = Array.from({ length: 300 }, () => (rng.nextFloat() < 0.5 ? 1 : 0));
    for (let r = 0; r < 300; r++) {
      for (let j = 0; j < 4; j++) {
        a.push(r % 20);
        b.push(Math.floor(r / 20));
        noise.push(rng.nextInt(3));
        yv.push(rng.nextFloat() < 0.9 ? level[r] : 1 - level[r]);
      }
    }
    const n = yv.length;
    const fold = Int32Array.from({ length: n }, (_, i) => i % 5);
    const key = searchGroupKey({ X: matrix([noise, a, b]), n, F: 3, y: Float64Array.from(yv), K: 2, regression: false }, fold, 5, DEFAULT_GROUP_OPTIONS);
    expect([...key.columns].sort()).toEqual([1, 2]);
    expect(key.groups).toBe(300);
    expect(key.loss).toBeLessThan(0.7 * key.base);
  });

  it('move a row of a seen record towards its record\'s outcome, and leave a row of an unseen record alone', () => {
    const X = matrix([[1, 1, 2, 2, NaN], [5, 5, 5, 6, 6]]);
    const y = Float64Array.of(10, 20, 30, 40, 50);
    const query = matrix([[1, 2, NaN, 3, 1], [5, 6, 6, 5, 6]]);
    // no smoothing, weight 1: a seen record's mean; an unseen value (3) or combination (1, 6) keeps the model's 100
    const exact = Float64Array.of(100, 100, 100, 100, 100);
    const rows = { X, n: 5, F: 2, y, K: 1, regression: true };
    mixGroup({ ...fitGroupTable(rows, [0, 1], 0), weight: 1 }, query, 5, 2, exact);
    expect(Array.from(exact)).toEqual([15, 40, 50, 100, 100]);
    // one row's worth of the model's output, half weight: (1, 5) holds 10 and 20
    const mixed = Float64Array.of(100, 100, 100, 100, 100);
    mixGroup({ ...fitGroupTable(rows, [0, 1], 1), weight: 0.5 }, query, 5, 2, mixed);
    expect(mixed[0]).toBeCloseTo(0.5 * 100 + 0.5 * ((10 + 20 + 100) / 3), 12);
    expect(Array.from(mixed.subarray(3))).toEqual([100, 100]);
  });

  it('centre a held row\'s statistic on the model\'s output when given, which a row without a record outside its fold keeps', () => {
    const y = Float64Array.of(1, 0, 0, 1);
    // rows 0-2 one record (folds 0, 1, 2), row 3 alone in fold 3
    const centre = Float64Array.of(0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.9, 0.1);
    const out = groupOofs(Int32Array.of(0, 0, 0, 1), 2, y, Int32Array.of(0, 1, 2, 3), 4, 2, false, [1], centre)[0];
    // row 0 sees two rows of class 0: P(class 0) = (2 + 1 * 0.4) / 3
    expect(out[0]).toBeCloseTo(2.4 / 3, 12);
    expect(Array.from(out.subarray(6))).toEqual([0.9, 0.1]);
  });
});

describe('engine 11: 10.0.0 with a group member', () => {
  it('keeps the member on rows that share a record\'s outcome, predicts seen records better than 10.0.0 and unseen ones as its model alone', () => {
    const rows = groupedRows(1500, 11);
    const test = groupedRows(400, 11, 12);
    const options = { target: 'target', task: 'classification' as const, seed: 3, config: FAST };
    const v10 = trainTabular(rows, { ...options, engineVersion: '10.0.0' });
    const v11 = trainTabular(rows, { ...options, engineVersion: '11.0.0' });
    expect(v11.model.group?.weight).toBeGreaterThan(0);
    expect(v11.model.group?.columns.length).toBeGreaterThanOrEqual(2);
    // out of fold and on new rows of the same records
    expect(v11.validation.score).toBeGreaterThan(v10.validation.score);
    const accuracy = (model: typeof v10.model) => predictRows(model, test).filter((p, i) => p.prediction === test[i].target).length / test.length;
    expect(accuracy(v11.model)).toBeGreaterThan(accuracy(v10.model) + 0.05);
    // a row of an unseen record gets the model's own output, unmixed
    const unseen = [{ unit: 'u999', shift: 's1', level: 0.3 }, { unit: 'u3', shift: 's99', level: 0.7 }];
    const withoutMember = { ...v11.model, group: undefined };
    expect(predictRows(v11.model, unseen)).toEqual(predictRows(withoutMember, unseen));
    expect(predictRows(v11.model, test.slice(0, 20))).not.toEqual(predictRows(withoutMember, test.slice(0, 20)));
  });

  it('trains exactly 10.0.0\'s model, but for its version and format, when the member is not kept', () => {
    for (const kind of ['binary', 'regression'] as const) {
      // below the member's 1,000 rows
      const rows = signalRows(300, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v10 = trainTabular(rows, { ...options, engineVersion: '10.0.0' }).model;
      const v11 = trainTabular(rows, { ...options, engineVersion: '11.0.0' }).model;
      expect(v11.group).toBeUndefined();
      expect(serialiseModel(v11)).toBe(serialiseModel({ ...v10, engine: { ...v10.engine, version: '11.0.0' }, formatVersion: 4 }));
    }
  });

  it('does not keep the member when no combination of columns carries the outcome, and then trains 10.0.0\'s model', () => {
    const p = prepare(signalRows(1200, 21, 'binary'), 'target', 'classification', categoryRuleFor('11.0.0'));
    const v11 = trainPrepared(p, { engineVersion: '11.0.0', seed: 1, config: FAST });
    expect(v11.group).toBeDefined();
    expect(v11.model.group).toBeUndefined();
    const v10 = trainPrepared(p, { engineVersion: '10.0.0', seed: 1, config: FAST });
    expect(serialiseModel(v11.model)).toBe(serialiseModel({ ...v10.model, engine: { ...v10.model.engine, version: '11.0.0' }, formatVersion: 4 }));
    expect(v11.validation).toEqual(v10.validation);
  });

  it('is deterministic for a seed and round-trips a group part through a format-4 artefact bit for bit', () => {
    const rows: Row[] = groupedRows(1200, 5);
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '11.0.0' as const, config: FAST };
    const a = trainTabular(rows, options).model;
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    expect(a.group).toBeDefined();
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(4);
    const back = loadModel(text);
    expect(serialiseModel(back)).toBe(text);
    const query = groupedRows(200, 5, 6);
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('11.0.0', kind, 4, FAST);
  });

  it('refuses an artefact whose group part points outside the row, holds its keys out of order, or does not fit the model', () => {
    const model = trainTabular(groupedRows(1200, 5), { target: 'target', seed: 4, engineVersion: '11.0.0', config: FAST }).model;
    const o = JSON.parse(serialiseModel(model)) as { group: { arrays: { columns: unknown } } };
    o.group.arrays.columns = JSON.parse(serialiseModel({ ...model, group: { ...model.group!, columns: Int32Array.of(99) } })).group.arrays.columns;
    expect(() => loadModel(JSON.stringify(o))).toThrow(/group part/);
    // keys out of order would make a lookup miss a seen key
    const keys = Int32Array.from(model.group!.keys);
    const L = model.group!.columns.length;
    for (let l = 0; l < L; l++) [keys[l], keys[L + l]] = [keys[L + l], keys[l]];
    const swapped = JSON.parse(serialiseModel(model)) as { group: { arrays: { keys: unknown } } };
    swapped.group.arrays.keys = JSON.parse(serialiseModel({ ...model, group: { ...model.group!, keys } })).group.arrays.keys;
    expect(() => loadModel(JSON.stringify(swapped))).toThrow(/group part/);
    // a part of another width than the model's outputs, or a weight outside (0, 1]
    for (const change of [{ nOutputs: 3 }, { weight: 1.5 }, { weight: 0 }]) {
      expect(() => loadModel(serialiseModel({ ...model, group: { ...model.group!, ...change } }))).toThrow(/group part/);
    }
  });

  it('stays trainable by name in format 4 and servable after 12.0.0, 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '11.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('11.0.0');
    expect(model.formatVersion).toBe(4);
    expect(canServe('tabular-gbdt', '11.0.0')).toBe(true);
  });
});
