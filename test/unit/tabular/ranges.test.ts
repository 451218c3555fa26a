import { loadModel, predictRows, serialiseModel, trainTabular, type Row } from '../../../engines/tabular/index';
import { parseRangeLabel, rangeColumnValues, rangeValueOf } from '../../../engines/tabular/ranges';
import { analyse, encodeRows, CATEGORY_RULE_V10 } from '../../../engines/tabular/schema';
import { Prng } from '../../../engines/tabular/prng';

const AGES = ['20-29', '30-39', '40-49', '50-59', '60-69', '70+'];

/** Rows whose target rises with the age band (binned as text), plus a numeric column and noise. */
function bandRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const a = rng.nextInt(AGES.length);
    const x = rng.nextFloat();
    const z = a - 2.5 + 2 * (x - 0.5) + (rng.nextFloat() * 3 - 1.5);
    rows.push({ age: AGES[a], x, colour: ['red', 'blue', 'green'][rng.nextInt(3)], target: z > 0 ? 'yes' : 'no' });
  }
  return rows;
}

const FAST = { maxRounds: 60, folds: 3, models: 3 };

describe('range labels (ranges.ts)', () => {
  it.each([
    ['40-49', 44.5], ['15–19', 17], ['0 to 2', 1], ['between 3 and 5', 4], ['15-19 cm', 17], ['40 years - 49 years', 44.5],
    ['$1,000-$4,999', 2999.5], ['[10, 20)', 15], ['(0.999, 5.0]', 2.9995], ['(-inf, 3]', 3], ['[7, inf)', 7],
    ['0<=X<200', 100], ['4 <= x < 7', 5.5], ['<0', 0], ['< 0', 0], ['<=200', 200], ['>7', 7], ['>= 7', 7], ['≥7', 7],
    ['65+', 65], ['10+ years', 10], ['9 or more', 9], ['Nine or more', 9], ['5 and over', 5], ['under 18', 18],
    ['less than 1 year', 1], ['more than 100', 100], ['at least 3', 3], ['up to 4', 4], ['5%-10%', 7.5],
  ])('%s reads as %d', (label, value) => {
    const r = parseRangeLabel(label);
    expect(r).not.toBeNull();
    expect(r?.value).toBeCloseTo(value, 12);
    expect(r?.plain).toBe(false);
  });

  it('plain numbers and number words read as plain values', () => {
    expect(parseRangeLabel('12')).toEqual({ value: 12, plain: true });
    expect(parseRangeLabel('1,000')).toEqual({ value: 1000, plain: true });
    expect(parseRangeLabel('Three')).toEqual({ value: 3, plain: true });
  });

  it.each(['A11', 'no checking', 'unemployed', 'red', '2020-01', '3-1', '', '1-2-3', 'x'.repeat(80) + '1-2'])('%s is not a range', (label) => {
    expect(parseRangeLabel(label)).toBeNull();
    expect(Number.isNaN(rangeValueOf(label))).toBe(true);
  });

  it('a column is one of ranges only when every label reads, one is a range or bound, and there are at least three numbers', () => {
    expect(rangeColumnValues(['0-2', '3-5', '6+'])).toEqual([1, 4, 6]);
    expect(rangeColumnValues(['One', 'Two', 'Three or more'])).toEqual([1, 2, 3]);
    expect(rangeColumnValues(['0-2', '3-5'])).toBeNull(); // two labels
    expect(rangeColumnValues(['0-2', '3-5', 'unknown'])).toBeNull(); // one label does not read
    expect(rangeColumnValues(['1', '2', '3'])).toBeNull(); // plain numbers only: a numeric column
    expect(rangeColumnValues(['<1', '0-2', '1 or less'])).toBeNull(); // two distinct numbers
  });
});

describe('CategoryRule.ranges (schema.ts)', () => {
  it('off by default: no derived feature, and the rule spelled without it trains the same model', () => {
    const rows = bandRows(200, 1);
    const a = analyse(rows, 'target', 'classification', CATEGORY_RULE_V10);
    expect(a.columns.find((c) => c.name === 'age')?.rangeValues).toBeUndefined();
    expect(a.features.map((f) => f.name)).toEqual(['age', 'x', 'colour']);
    const opts = { target: 'target', task: 'classification' as const, seed: 3, engineVersion: '16.0.0' as const };
    const plain = trainTabular(rows, { ...opts, config: FAST });
    const spelled = trainTabular(rows, { ...opts, config: { ...FAST, categories: { ranges: undefined } } });
    expect(serialiseModel(spelled.model)).toBe(serialiseModel(plain.model));
  });

  it("'beside': a numeric feature of the labels' numbers after the categories; 'replace': instead of them", () => {
    const rows = bandRows(200, 1);
    const beside = analyse(rows, 'target', 'classification', { ...CATEGORY_RULE_V10, ranges: 'beside' });
    const age = beside.columns.find((c) => c.name === 'age');
    expect(age?.categories).toEqual(AGES);
    expect(age?.rangeValues).toEqual([24.5, 34.5, 44.5, 54.5, 64.5, 70]);
    expect(beside.columns.find((c) => c.name === 'colour')?.rangeValues).toBeUndefined();
    expect(beside.features.map((f) => [f.name, f.kind])).toEqual([['age', 'categorical'], ['age.range', 'numeric'], ['x', 'numeric'], ['colour', 'categorical']]);
    const X = encodeRows(rows, beside.columns, 4);
    for (let i = 0; i < rows.length; i++) {
      expect(X[i * 4]).toBe(AGES.indexOf(rows[i].age as string));
      expect(X[i * 4 + 1]).toBe(rangeValueOf(rows[i].age as string));
    }
    const replace = analyse(rows, 'target', 'classification', { ...CATEGORY_RULE_V10, ranges: 'replace' });
    expect(replace.features.map((f) => [f.name, f.kind])).toEqual([['age', 'numeric'], ['x', 'numeric'], ['colour', 'categorical']]);
    expect(encodeRows(rows, replace.columns, 3)[0]).toBe(rangeValueOf(rows[0].age as string));
  });

  it('no leakage: the numbers come from the labels alone (the same for any target)', () => {
    const rows = bandRows(200, 2);
    const flipped = rows.map((r, i) => ({ ...r, target: i % 3 === 0 ? 'yes' : 'no' }));
    const rule = { ...CATEGORY_RULE_V10, ranges: 'beside' as const };
    const a = analyse(rows, 'target', 'classification', rule);
    const b = analyse(flipped, 'target', 'classification', rule);
    expect(b.columns).toEqual(a.columns);
    expect(Array.from(encodeRows(flipped, b.columns, 4))).toEqual(Array.from(encodeRows(rows, a.columns, 4)));
  });

  it('prediction: unseen labels that read get their number, others and missing values missing; serialised models predict the same', () => {
    const rows = bandRows(300, 3);
    const model = trainTabular(rows, { target: 'target', task: 'classification', seed: 5, engineVersion: '16.0.0', config: { ...FAST, categories: { ranges: 'beside' } } }).model;
    const cols = model.columns;
    const test: Row[] = [{ age: '40-49', x: 0.3 }, { age: '80-89', x: 0.3 }, { age: 'unknown', x: 0.3 }, { age: null, x: 0.3 }, { x: 0.3 }];
    const X = encodeRows(test, cols, model.features.length);
    const F = model.features.length;
    expect(X[0 * F + 1]).toBe(44.5);
    expect(X[1 * F + 1]).toBe(84.5);
    expect(Number.isNaN(X[1 * F])).toBe(true); // unseen category, no "other" code
    expect(Number.isNaN(X[2 * F + 1])).toBe(true);
    expect(Number.isNaN(X[3 * F + 1])).toBe(true);
    expect(Number.isNaN(X[4 * F + 1])).toBe(true);
    const text = serialiseModel(model);
    const loaded = loadModel(text);
    expect(serialiseModel(loaded)).toBe(text);
    const more = [...test, ...bandRows(50, 4)];
    expect(predictRows(loaded, more)).toEqual(predictRows(model, more));
    // the model uses the derived feature: an unseen band above the seen ones scores as the oldest band
    const p = predictRows(model, [{ age: '80-89', x: 0.5, colour: 'red' }, { age: '20-29', x: 0.5, colour: 'red' }]);
    expect((p[0].probabilities as Record<string, number>).yes).toBeGreaterThan((p[1].probabilities as Record<string, number>).yes);
  });

  it('determinism: the same seed trains the same artefact', () => {
    const rows = bandRows(250, 6);
    const opts = { target: 'target', task: 'classification' as const, seed: 7, engineVersion: '16.0.0' as const, config: { ...FAST, categories: { ranges: 'beside' as const } } };
    expect(serialiseModel(trainTabular(rows, opts).model)).toBe(serialiseModel(trainTabular(rows, opts).model));
  });
});
