import { analyseDataset, TabularDataError, type Row } from '../../../engines/tabular/index';
import { classLabelReader, MAX_FEATURE_COLUMNS, MAX_FEATURE_NAMES_LENGTH, parseIsoDate } from '../../../engines/tabular/schema';

function base(n: number, extra: (i: number) => Row): Row[] {
  return Array.from({ length: n }, (_, i) => ({ ...extra(i), target: i % 2 === 0 ? 'a' : 'b' }));
}

function col(report: ReturnType<typeof analyseDataset>, name: string) {
  const c = report.columns.find((x) => x.name === name);
  if (!c) throw new Error(`no column ${name}`);
  return c;
}

describe('column type detection', () => {
  const rows = base(40, (i) => ({
    num_text: String(i * 1.5),
    num: i % 7,
    flag: i % 3 === 0,
    flag_text: i % 3 === 0 ? 'TRUE' : 'false',
    when: `2024-0${(i % 9) + 1}-1${i % 10}`,
    stamp: `2024-03-0${(i % 9) + 1}T1${i % 10}:30:00Z`,
    sparse: i % 4 === 0 ? '' : i % 4 === 1 ? null : i,
    constant: 'same',
    id: i + 1,
    code: `ID-${1000 + i * 7}`,
    color: ['red', 'green', 'blue'][i % 3],
    empty: '',
  }));
  const report = analyseDataset(rows, { target: 'target' });

  it('counts numeric text as numeric and keeps booleans', () => {
    expect(col(report, 'num_text').type).toBe('numeric');
    expect(col(report, 'num').type).toBe('numeric');
    expect(col(report, 'flag').type).toBe('boolean');
    expect(col(report, 'flag_text').type).toBe('boolean');
    expect(col(report, 'color').type).toBe('categorical');
  });

  it('expands ISO dates (and times) into numeric parts', () => {
    expect(col(report, 'when').type).toBe('date');
    expect(col(report, 'when').note).toMatch(/year, month, day, weekday$/);
    expect(col(report, 'stamp').note).toMatch(/hour/);
    expect(parseIsoDate('2024-03-09T17:45:00Z')).toEqual({ year: 2024, month: 3, day: 9, weekday: 6, hour: 17, hasTime: true });
    expect(parseIsoDate('2024-13-01')).toBeNull();
  });

  it('keeps a mostly numeric column numeric, counting stray text as missing and saying so', () => {
    const rs = base(60, (i) => ({ v: i === 7 ? 'n/a' : (i * 13) % 17, w: i % 2 ? 'x' : (i * 3) % 5 }));
    const r = analyseDataset(rs, { target: 'target' });
    expect(col(r, 'v')).toMatchObject({ type: 'numeric', missing: 1, used: true });
    expect(col(r, 'v').note).toMatch(/non-numeric/);
    expect(r.warnings.some((w) => w.includes('"v"'))).toBe(true);
    expect(col(r, 'w').type).toBe('categorical');
  });

  it('counts empty strings and nulls as missing, without imputing', () => {
    const c = col(report, 'sparse');
    expect(c.type).toBe('numeric');
    expect(c.missing).toBe(20);
    expect(c.used).toBe(true);
  });

  it('reports and excludes constant, empty and identifier-like columns', () => {
    expect(col(report, 'constant')).toMatchObject({ used: false });
    expect(col(report, 'constant').note).toMatch(/constant/);
    expect(col(report, 'empty')).toMatchObject({ used: false, type: 'empty' });
    expect(col(report, 'id')).toMatchObject({ used: false });
    expect(col(report, 'id').note).toMatch(/identifier/);
    expect(col(report, 'code')).toMatchObject({ used: false });
    expect(report.warnings.join(' ')).toMatch(/Excluded column\(s\): .*constant/);
  });

  it('folds high-cardinality text into the most frequent categories plus "other", and says so', () => {
    const hc = base(600, (i) => ({ city: `c${i % 150}`, x: i % 5 }));
    const r = analyseDataset(hc, { target: 'target' });
    const c = col(r, 'city');
    expect(c.used).toBe(true);
    expect(c.note).toMatch(/high cardinality: kept the 63 most frequent of 150/);
    expect(r.warnings.some((w) => w.includes('city'))).toBe(true);
  });

  it('drops and counts rows with an empty target; infers the task', () => {
    const rs = base(30, (i) => ({ x: i }));
    rs[3].target = '';
    rs[4].target = null;
    delete rs[5].target;
    const r = analyseDataset(rs, { target: 'target' });
    expect(r.rows_received).toBe(30);
    expect(r.rows_used).toBe(27);
    expect(r.rows_dropped_empty_target).toBe(3);
    expect(r.task).toBe('binary');
    expect(r.classes).toEqual(['a', 'b']);
    const reg = Array.from({ length: 30 }, (_, i) => ({ x: i % 4, target: i * 0.37 }));
    expect(analyseDataset(reg, { target: 'target' }).task).toBe('regression');
    const few = Array.from({ length: 30 }, (_, i) => ({ x: i % 4, target: i % 3 }));
    expect(analyseDataset(few, { target: 'target' }).task).toBe('multiclass');
    expect(analyseDataset(few, { target: 'target', task: 'regression' }).task).toBe('regression');
    const bools = Array.from({ length: 30 }, (_, i) => ({ x: i % 4, target: i % 2 === 0 }));
    expect(analyseDataset(bools, { target: 'target' })).toMatchObject({ task: 'binary', classes: ['false', 'true'] });
  });

  it('reads a column or target named like a member of Object.prototype only from the row itself (a row without it is missing, not the prototype\'s function)', () => {
    const rs: Row[] = Array.from({ length: 30 }, (_, i) => ({ x: i % 5, ...(i % 5 === 0 ? {} : { constructor: i % 7 }), ...(i % 6 === 0 ? {} : { toString: i % 2 === 0 ? 'a' : 'b' }) }));
    const r = analyseDataset(rs, { target: 'toString' });
    expect([r.rows_used, r.rows_dropped_empty_target, r.classes]).toEqual([25, 5, ['a', 'b']]);
    expect([col(r, 'constructor').type, col(r, 'constructor').missing]).toEqual(['numeric', 5]);
  });
});

describe('data errors', () => {
  function expectCode(fn: () => unknown, code: string): void {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(TabularDataError);
      expect((e as TabularDataError).code).toBe(code);
      expect((e as Error).message.length).toBeGreaterThan(10);
      return;
    }
    throw new Error(`expected ${code}`);
  }
  it('refuses fewer than 10 usable rows', () => {
    const rows = base(9, (i) => ({ x: i }));
    expectCode(() => analyseDataset(rows, { target: 'target' }), 'TOO_FEW_ROWS');
    const withEmpty = base(12, (i) => ({ x: i }));
    withEmpty[0].target = null;
    withEmpty[1].target = '';
    withEmpty[2].target = '  ';
    expectCode(() => analyseDataset(withEmpty, { target: 'target' }), 'TOO_FEW_ROWS');
  });
  it('refuses fewer than 2 distinct target values', () => {
    const rows = Array.from({ length: 20 }, (_, i) => ({ x: i, target: 'same' }));
    expectCode(() => analyseDataset(rows, { target: 'target' }), 'TOO_FEW_TARGET_VALUES');
  });
  it('refuses a target column that does not exist', () => {
    const rows = Array.from({ length: 20 }, (_, i) => ({ x: i, y: i % 2 }));
    expectCode(() => analyseDataset(rows, { target: 'target' }), 'TARGET_MISSING');
  });
  it('refuses regression on a text target', () => {
    const rows = base(20, (i) => ({ x: i }));
    expectCode(() => analyseDataset(rows, { target: 'target', task: 'regression' }), 'TARGET_NOT_NUMERIC');
  });
  it('refuses data without any usable feature', () => {
    const rows = base(20, () => ({ c: 'k' }));
    expectCode(() => analyseDataset(rows, { target: 'target' }), 'NO_USABLE_FEATURES');
  });
  it('takes at most 2,000 feature columns (the target not counted) and at most 65,536 characters of their names together', () => {
    const wide = (columns: number, nameLength: number) =>
      base(12, (i) => Object.fromEntries(Array.from({ length: columns }, (_, c) => [String(c).padStart(nameLength, 'c'), (i * (c + 1)) % 7])));
    expect(analyseDataset(wide(MAX_FEATURE_COLUMNS, 32), { target: 'target' }).columns).toHaveLength(2_000);
    expectCode(() => analyseDataset(wide(MAX_FEATURE_COLUMNS + 1, 4), { target: 'target' }), 'TOO_MANY_COLUMNS');
    // 128 names of 512 characters would break the name's own bound: 131 of 500 and one of 36 are 65,536
    const named = (lengths: number[]) => base(12, (i) => Object.fromEntries(lengths.map((n, c) => [String(c).padStart(n, 'c'), (i * (c + 1)) % 7])));
    const exact = [...Array.from({ length: 131 }, () => 500), 36];
    expect(exact.reduce((a, b) => a + b, 0)).toBe(MAX_FEATURE_NAMES_LENGTH);
    expect(analyseDataset(named(exact), { target: 'target' }).columns).toHaveLength(132);
    expectCode(() => analyseDataset(named([...exact.slice(0, -1), 37]), { target: 'target' }), 'COLUMN_NAMES_TOO_LONG');
  });
});

describe('classLabelReader: the class an outcome names, by the rule training read the target with', () => {
  const classesOf = (target: unknown[]) =>
    analyseDataset(target.map((t, i) => ({ x: i % 5, target: t })), { target: 'target', task: 'classification' }).classes ?? [];

  it('reads numeric classes by value, whatever the spelling, in the type training gave them', () => {
    const classes = classesOf(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? '0.0000001' : '1')));
    expect(classes).toEqual(['1e-7', '1']);
    for (const v of [1e-7, '0.0000001', '1e-7', ' 1e-7 ']) expect(classLabelReader(classes)(v)).toBe(1e-7);
    for (const v of [1, '1', '1.0']) expect(classLabelReader(classes)(v)).toBe(1);
    for (const v of [2, 'one', '', null, {}]) expect(classLabelReader(classes)(v)).toBeNull();
  });

  it('reads boolean classes from booleans and their text in any case, and not from 0 or 1', () => {
    const classes = classesOf(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'TRUE' : false)));
    expect(classes).toEqual(['false', 'true']);
    expect(classLabelReader(classes)('TRUE')).toBe(true);
    expect(classLabelReader(classes)(' false ')).toBe(false);
    expect(classLabelReader(classes)(1)).toBeNull();
    expect(classLabelReader(classes)('yes')).toBeNull();
  });

  it('matches text classes by their text only: "007" is not 7', () => {
    const classes = classesOf(Array.from({ length: 30 }, (_, i) => ['007', 'x', 5][i % 3]));
    expect(classes).toEqual(['007', '5', 'x']);
    expect(classLabelReader(classes)('007')).toBe('007');
    expect(classLabelReader(classes)(5)).toBe('5');
    expect(classLabelReader(classes)(7)).toBeNull();
    expect(classLabelReader(classes)('7')).toBeNull();
  });
});
