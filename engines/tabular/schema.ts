/**
 * Input handling: column type detection, the data report, target handling and the encoding of
 * row objects into a dense, row-major Float64Array feature matrix (NaN = missing).
 */
import { TabularDataError } from './errors';
import { rangeColumnValues, rangeValueOf } from './ranges';

export type Row = Record<string, unknown>;
export type TaskOption = 'classification' | 'regression';
export type Task = 'binary' | 'multiclass' | 'regression';
export type ClassLabel = string | number | boolean;
export type ColumnType = 'numeric' | 'boolean' | 'categorical' | 'date' | 'empty';

export interface ColumnReport {
  name: string;
  type: ColumnType;
  missing: number;
  used: boolean;
  note?: string;
}

export interface DataReport {
  rows_received: number;
  rows_used: number;
  rows_dropped_empty_target: number;
  task: Task;
  target: string;
  classes?: string[];
  columns: ColumnReport[];
  warnings: string[];
}

/** How one input column becomes model features (stored in the artefact). */
export interface ColumnSchema {
  name: string;
  type: ColumnType;
  used: boolean;
  /** categorical: known categories in code order */
  categories?: string[];
  /** categorical: code of the "other" bucket for folded / unseen categories, -1 if none */
  otherCode?: number;
  /** date: whether the hour part is used */
  withTime?: boolean;
  /**
   * categorical, CategoryRule.ranges: every label names a numeric range or bound (ranges.ts); the
   * number of each of `categories` (code order). The column gets a numeric feature of that number
   * beside its categories ('beside') or instead of them ('replace'); a label outside `categories` gets
   * the number its text reads as (missing when it reads as none).
   */
  rangeValues?: number[];
  rangeMode?: RangeMode;
}

/** How a column of range labels is encoded (CategoryRule.ranges). */
export type RangeMode = 'beside' | 'replace';

/** Encoded feature (one per numeric/boolean/categorical column, several per date column). */
export interface FeatureSpec {
  name: string;
  column: string;
  kind: 'numeric' | 'categorical';
  /** categorical: number of codes */
  numCategories: number;
}

export const MIN_ROWS = 10;
/** Codes of a text column before engine 10 (its 63 most frequent categories and "other"). */
export const MAX_CATEGORIES = 64;

/**
 * Which categories of a text column get a code of their own; the others share one "other" code.
 * A column of at most `mostFrequent + 1` categories keeps them all. Above that, the `mostFrequent`
 * most frequent are kept, then each further one, in order of frequency, while it has at least
 * `minRowsBeyond` rows and fewer than `maxKept` are kept.
 */
export interface CategoryRule {
  mostFrequent: number;
  minRowsBeyond: number;
  /** at most 254: 254 codes, "other" and the missing bin fill the 256 values of a byte bin */
  maxKept: number;
  /**
   * Text columns whose every distinct label names a numeric range or bound ("40-49", "<0", "65+";
   * ranges.ts) also get the labels' numbers as an ordered numeric feature: beside the categorical
   * feature or in its place. Absent (engines 1.0.0-17.0.0): no such feature.
   */
  ranges?: RangeMode;
}

/** Engines 1.0.0-9.0.0: the 63 most frequent categories. */
export const CATEGORY_RULE_V1: CategoryRule = { mostFrequent: MAX_CATEGORIES - 1, minRowsBeyond: Infinity, maxKept: MAX_CATEGORIES - 1 };
/**
 * Engine 10.0.0: the 63 most frequent, and after them every category of at least 20 rows (the
 * leaf minimum of data above 800 rows), up to 254. A category that frequent is an effect the trees
 * can estimate (a country in panel data, a store, a sensor); folding it into "other" hid it.
 */
export const CATEGORY_RULE_V10: CategoryRule = { mostFrequent: MAX_CATEGORIES - 1, minRowsBeyond: 20, maxKept: 254 };
export const MAX_CLASSES = 100;
/**
 * Longest class label, in characters of its string form. Every scored row repeats each label (its
 * `prediction`, and one `proba_<class>` field per class): ten labels of 100,000 characters made a
 * 1 KB call of 100 rows answer 110 MB, and one of 600 rows a 500 (the answer could not be written
 * as one string) (a ninth probe). 200 keeps the largest call (10,000 rows, 100 classes) under 250 MB.
 */
export const MAX_CLASS_LABEL_LENGTH = 200;
/**
 * Longest feature column name, in characters: a target's limit (the API's). The names are the model's
 * `feature_columns`, in every answer about the model, its listing and its webhook events: a ninth
 * probe's CSV header of one 10,000,000-character name trained (18 s for 20 rows), and every such
 * answer then carried 10 MB.
 */
export const MAX_COLUMN_NAME_LENGTH = 500;
/**
 * Most feature columns a model may have, and the most characters their names may hold together. The
 * names are the model's `feature_columns`, in every answer about the model, its listing and its
 * webhook events, so one name's bound does not bound them: a nineteenth probe's CSV of 20,000 columns
 * named in 499 characters trained, and every answer about that model then carried 10 MB (a listing of
 * four such models 42 MB). 2,000 columns is twice what Vertex AI's tabular training accepts; 65,536
 * characters is 2,000 names of 32, and keeps a listing of 200 models under 14 MB.
 */
export const MAX_FEATURE_COLUMNS = 2_000;
export const MAX_FEATURE_NAMES_LENGTH = 65_536;
/**
 * Largest magnitude of a regression target (and of an outcome's actual value): the squares of larger
 * values, and their sums over a million rows, overflow a double, so losses and scores become infinite.
 */
export const MAX_TARGET_MAGNITUDE = 1e150;
/** Numeric targets with at most this many distinct integer values are classified. */
export const MAX_INTEGER_CLASSES = 10;

const NUMERIC_RE = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const ID_NAME_RE = /(^id$|_id$|^id_|^row_?(id|num|number)?$|^index$|uuid|guid|identifier)/i;

export function isMissing(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === 'number') return Number.isNaN(v);
  if (typeof v === 'string') return v.trim() === '';
  return false;
}

/**
 * Reads a column of rows: `row[name]`, except for a name of Object.prototype's ("constructor",
 * "toString", "valueOf"…), read only as the row's own property (undefined when the row lacks it):
 * `row[name]` on such a row read the prototype's function, which counted as a present, categorical
 * value (of the target too). Decided once per column, so ordinary columns keep their plain read.
 */
function cellReader(name: string): (row: Row) => unknown {
  return name in Object.prototype ? (row) => (Object.hasOwn(row, name) ? row[name] : undefined) : (row) => row[name];
}

/** Number for numeric values and numeric text, else NaN. */
export function toNumber(v: unknown): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : NaN;
  if (typeof v === 'string' && NUMERIC_RE.test(v)) return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return NaN;
}

function toBool(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true') return 1;
    if (s === 'false') return 0;
  }
  if (typeof v === 'number') {
    if (v === 1) return 1;
    if (v === 0) return 0;
  }
  return NaN;
}

export interface DateParts {
  year: number;
  month: number;
  day: number;
  weekday: number;
  hour: number;
  hasTime: boolean;
}

/** Parses ISO dates as written (wall-clock parts; no time-zone conversion, so results never depend on the host). */
export function parseIsoDate(v: unknown): DateParts | null {
  if (typeof v !== 'string') return null;
  const m = DATE_RE.exec(v.trim());
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  const hour = m[4] !== undefined ? Number(m[4]) : 0;
  if (hour > 23) return null;
  const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  return { year, month, day, weekday, hour, hasTime: m[4] !== undefined };
}

function labelKey(v: unknown): string {
  return String(v);
}

/**
 * The reader of the class labels that values name for a model whose classes are `classes` (their
 * string forms, as the training report lists them), by the rule training read its target with: it
 * answers a value's label, or null when it names none. Boolean classes read true and "TRUE"; numeric
 * classes read 1, "1.0" and " 1 " as 1, and 1e-7 as 1e-7 whatever its spelling; other classes are
 * matched by their text. The label comes back in the type training gave it, so an outcome stored with
 * it is what the model predicts and the refresh reads, and PostgreSQL's spelling of a number (1e-7 as
 * 0.0000001) cannot make it another class. The kind of the classes is found once, not per value.
 */
export function classLabelReader(classes: readonly string[]): (value: unknown) => ClassLabel | null {
  const known = new Set(classes);
  const named = (label: ClassLabel | null): ClassLabel | null => (label !== null && known.has(labelKey(label)) ? label : null);
  if (classes.every((c) => c === 'false' || c === 'true')) {
    return (value) => {
      const b = typeof value === 'boolean' || typeof value === 'string' ? toBool(value) : NaN;
      return named(Number.isNaN(b) ? null : b === 1);
    };
  }
  if (classes.every((c) => !Number.isNaN(toNumber(c)))) {
    return (value) => {
      const n = toNumber(value);
      return named(Number.isNaN(n) ? null : n);
    };
  }
  return (value) => named(typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? labelKey(value) : null);
}

/** Column names in order of first appearance. */
export function collectColumns(rows: Row[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of rows) {
    if (r === null || typeof r !== 'object') continue;
    for (const k of Object.keys(r)) {
      if (!seen.has(k)) {
        seen.add(k);
        out.push(k);
      }
    }
  }
  return out;
}

export interface TargetInfo {
  task: Task;
  /** classification: class labels (original type), sorted */
  classes: ClassLabel[] | null;
  /** kept rows (indices into the input) */
  keep: number[];
  /** encoded target per kept row: class index or numeric value */
  y: Float64Array;
}

function compareLabels(a: ClassLabel, b: ClassLabel): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

export function analyseTarget(rows: Row[], target: string, task?: TaskOption): TargetInfo {
  if (typeof target !== 'string' || target === '') {
    throw new TabularDataError('INVALID_OPTIONS', 'Option `target` must name a column.');
  }
  if (task !== undefined && task !== 'classification' && task !== 'regression') {
    throw new TabularDataError('INVALID_OPTIONS', "Option `task` must be 'classification' or 'regression'.");
  }
  let present = false;
  const keep: number[] = [];
  const targetOf = cellReader(target);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    if (r === null || typeof r !== 'object') continue;
    if (Object.prototype.hasOwnProperty.call(r, target)) present = true;
    if (!isMissing(targetOf(r))) keep.push(i);
  }
  if (!present) {
    throw new TabularDataError('TARGET_MISSING', `The target column "${target}" is not present in the rows.`);
  }
  if (keep.length < MIN_ROWS) {
    throw new TabularDataError(
      'TOO_FEW_ROWS',
      `At least ${MIN_ROWS} rows with a non-empty target are needed; got ${keep.length}.`,
    );
  }
  const values = keep.map((i) => targetOf(rows[i]));
  const allBool = values.every((v) => typeof v === 'boolean' || !Number.isNaN(toBool(v)) && typeof v === 'string');
  const nums = values.map(toNumber);
  const allNumeric = !allBool && nums.every((x) => !Number.isNaN(x));
  const distinct = new Map<string, ClassLabel>();
  for (const v of values) {
    const k = labelKey(v);
    if (!distinct.has(k)) distinct.set(k, v as ClassLabel);
  }
  if (distinct.size < 2) {
    throw new TabularDataError(
      'TOO_FEW_TARGET_VALUES',
      `The target "${target}" needs at least 2 distinct values; it has ${distinct.size}.`,
    );
  }
  let isClassification: boolean;
  if (task === 'regression') {
    if (!allNumeric) {
      throw new TabularDataError('TARGET_NOT_NUMERIC', `Regression needs a numeric target; "${target}" has non-numeric values.`);
    }
    isClassification = false;
  } else if (task === 'classification') {
    isClassification = true;
  } else if (!allNumeric) {
    isClassification = true;
  } else {
    const numDistinct = new Set(nums).size;
    isClassification = nums.every((x) => Number.isInteger(x)) && numDistinct <= MAX_INTEGER_CLASSES;
  }
  if (!isClassification) {
    const huge = nums.find((x) => !(Math.abs(x) <= MAX_TARGET_MAGNITUDE));
    if (huge !== undefined) {
      throw new TabularDataError(
        'TARGET_OUT_OF_RANGE',
        `Regression targets must lie within ±${MAX_TARGET_MAGNITUDE}; "${target}" holds ${huge} (its square overflows, so no error could be measured).`,
      );
    }
    return { task: 'regression', classes: null, keep, y: Float64Array.from(nums) };
  }
  // Numeric class labels are read as doubles, which hold integers exactly only up to 2^53 - 1: beyond,
  // 9007199254740993 and 9007199254740992 were one class and 12345678901234567891 was named
  // 12345678901234567000, a label the caller cannot join back (a seventh probe), JSON and CSV alike.
  if (allNumeric) {
    const j = nums.findIndex((x) => Number.isInteger(x) && !Number.isSafeInteger(x));
    if (j >= 0) {
      throw new TabularDataError(
        'TARGET_NOT_EXACT',
        `The target "${target}" holds ${String(values[j])}, a class label beyond ±${Number.MAX_SAFE_INTEGER} (2^53 - 1), where numbers cannot be told apart: labels would merge and be named otherwise than sent. Use labels that are not such numbers (e.g. with a letter prefix), or task "regression" if they are quantities.`,
      );
    }
  }
  // Classification: labels keyed by their string form; numeric text labels become numbers.
  const byKey = new Map<string, ClassLabel>();
  values.forEach((v, j) => {
    let label: ClassLabel;
    if (allBool) label = typeof v === 'boolean' ? v : toBool(v) === 1;
    else if (allNumeric) label = nums[j];
    else label = v as ClassLabel;
    const k = labelKey(label);
    if (!byKey.has(k)) byKey.set(k, label);
  });
  const classes = [...byKey.values()].sort(compareLabels);
  if (classes.length > MAX_CLASSES) {
    throw new TabularDataError(
      'TOO_MANY_CLASSES',
      `The target "${target}" has ${classes.length} distinct values; classification supports at most ${MAX_CLASSES}.`,
    );
  }
  const long = classes.find((c) => labelKey(c).length > MAX_CLASS_LABEL_LENGTH);
  if (long !== undefined) {
    throw new TabularDataError(
      'CLASS_LABEL_TOO_LONG',
      `The target "${target}" holds a class label of ${labelKey(long).length} characters; classification supports labels of at most ${MAX_CLASS_LABEL_LENGTH} (each scored row repeats every label).`,
    );
  }
  const index = new Map<string, number>();
  classes.forEach((c, i) => index.set(labelKey(c), i));
  const y = new Float64Array(keep.length);
  values.forEach((v, j) => {
    let label: ClassLabel;
    if (allBool) label = typeof v === 'boolean' ? v : toBool(v) === 1;
    else if (allNumeric) label = nums[j];
    else label = v as ClassLabel;
    y[j] = index.get(labelKey(label)) as number;
  });
  return { task: classes.length === 2 ? 'binary' : 'multiclass', classes, keep, y };
}

interface DetectResult {
  schema: ColumnSchema;
  report: ColumnReport;
  warning?: string;
}

function detectColumn(name: string, values: unknown[], rule: CategoryRule): DetectResult {
  let missing = 0;
  let numCount = 0;
  let boolCount = 0;
  let dateCount = 0;
  let hasTime = false;
  const present: unknown[] = [];
  for (const v of values) {
    if (isMissing(v)) {
      missing++;
      continue;
    }
    present.push(v);
    if (typeof v === 'boolean' || (typeof v === 'string' && /^\s*(true|false)\s*$/i.test(v))) boolCount++;
    else if (!Number.isNaN(toNumber(v))) numCount++;
    else {
      const d = parseIsoDate(v);
      if (d) {
        dateCount++;
        if (d.hasTime && d.hour !== 0) hasTime = true;
      }
    }
  }
  const m = present.length;
  if (m === 0) {
    return {
      schema: { name, type: 'empty', used: false },
      report: { name, type: 'empty', missing, used: false, note: 'excluded: every value is missing' },
    };
  }
  let type: ColumnType;
  let strayText = 0;
  if (boolCount === m) type = 'boolean';
  else if (numCount === m) type = 'numeric';
  else if (dateCount === m) type = 'date';
  else if (m >= 20 && numCount >= 0.95 * m) {
    // numbers with a few stray text values (e.g. "n/a", "?"): numeric, the stray values count as missing
    type = 'numeric';
    strayText = m - numCount;
  } else type = 'categorical';

  const distinct = new Map<string, number>();
  // numeric: the numbers (not missing) in row order, and only how many distinct ones there are, which
  // a set of the numbers counts without a string per value (String is one-to-one on numbers but for
  // +0 and -0, which the set holds as one too)
  const nums: number[] = [];
  let distinctCount: number;
  if (type === 'numeric') {
    for (const v of present) {
      const x = toNumber(v);
      if (!Number.isNaN(x)) nums.push(x);
    }
    distinctCount = new Set(nums).size;
  } else {
    for (const v of present) {
      const k = type === 'boolean' ? String(toBool(v)) : String(v);
      distinct.set(k, (distinct.get(k) ?? 0) + 1);
    }
    distinctCount = distinct.size;
  }
  if (distinctCount <= 1) {
    return {
      schema: { name, type, used: false },
      report: { name, type, missing, used: false, note: 'excluded: constant (a single distinct value)' },
    };
  }
  if (type === 'numeric') {
    if (strayText === 0 && distinctCount === m && m >= 20 && nums.every((x) => Number.isInteger(x))) {
      let consecutive = true;
      for (let i = 1; i < nums.length && consecutive; i++) if (nums[i] !== nums[i - 1] + 1) consecutive = false;
      if (consecutive || ID_NAME_RE.test(name)) {
        return {
          schema: { name, type, used: false },
          report: { name, type, missing, used: false, note: 'excluded: identifier-like (unique integer per row)' },
        };
      }
    }
    if (strayText > 0) {
      const note = `${strayText} non-numeric value(s) treated as missing`;
      return {
        schema: { name, type, used: true },
        report: { name, type, missing: missing + strayText, used: true, note },
        warning: `Column "${name}" is numeric but has ${strayText} non-numeric value(s); they are treated as missing.`,
      };
    }
    return { schema: { name, type, used: true }, report: { name, type, missing, used: true } };
  }
  if (type === 'boolean') {
    return { schema: { name, type, used: true }, report: { name, type, missing, used: true } };
  }
  if (type === 'date') {
    return {
      schema: { name, type, used: true, withTime: hasTime },
      report: { name, type, missing, used: true, note: `expanded to year, month, day, weekday${hasTime ? ', hour' : ''}` },
    };
  }
  // categorical text
  if (m >= 20 && distinct.size >= 0.9 * m) {
    return {
      schema: { name, type, used: false },
      report: { name, type, missing, used: false, note: 'excluded: identifier-like (nearly every value is unique)' },
    };
  }
  const sorted = [...distinct.entries()].sort((a, b) => (b[1] - a[1]) || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let keep = sorted.length > rule.mostFrequent + 1 ? rule.mostFrequent : sorted.length;
  while (keep < sorted.length && keep < rule.maxKept && sorted[keep][1] >= rule.minRowsBeyond) keep++;
  if (keep < sorted.length) {
    const kept = sorted.slice(0, keep).map((e) => e[0]).sort();
    const note = `high cardinality: kept the ${kept.length} most frequent of ${sorted.length} categories, the rest grouped as "other"`;
    return {
      schema: withRanges({ name, type, used: true, categories: kept, otherCode: kept.length }, sorted, rule),
      report: { name, type, missing, used: true, note },
      warning: `Column "${name}" has ${sorted.length} distinct values; only the ${kept.length} most frequent are used, the rest count as "other".`,
    };
  }
  const cats = sorted.map((e) => e[0]).sort();
  return { schema: withRanges({ name, type, used: true, categories: cats, otherCode: -1 }, sorted, rule), report: { name, type, missing, used: true } };
}

/**
 * A categorical column's schema with its range numbers (CategoryRule.ranges) when every distinct label
 * of the column (`distinct`, kept or folded into "other") reads as a range, bound or number, at least
 * one as a range or bound, with at least MIN_RANGE_LABELS distinct numbers (ranges.ts). The numbers
 * come from the labels' text alone.
 */
function withRanges(schema: ColumnSchema, distinct: Array<[string, number]>, rule: CategoryRule): ColumnSchema {
  if (!rule.ranges) return schema;
  if (!rangeColumnValues(distinct.map((e) => e[0]))) return schema;
  return { ...schema, rangeValues: (schema.categories ?? []).map(rangeValueOf), rangeMode: rule.ranges };
}

export interface Analysis {
  report: DataReport;
  target: TargetInfo;
  columns: ColumnSchema[];
  features: FeatureSpec[];
}

export function analyse(rows: Row[], target: string, task: TaskOption | undefined, rule: CategoryRule): Analysis {
  if (!Array.isArray(rows)) throw new TabularDataError('INVALID_OPTIONS', 'Rows must be an array of objects.');
  const t = analyseTarget(rows, target, task);
  const names = collectColumns(rows).filter((c) => c !== target);
  const long = names.find((n) => n.length > MAX_COLUMN_NAME_LENGTH);
  if (long !== undefined) {
    throw new TabularDataError('COLUMN_NAME_TOO_LONG', `A column name holds ${long.length} characters; a column is named in at most ${MAX_COLUMN_NAME_LENGTH}, as a target is.`);
  }
  if (names.length > MAX_FEATURE_COLUMNS) {
    throw new TabularDataError('TOO_MANY_COLUMNS', `The data has ${names.length} columns besides the target; a model takes at most ${MAX_FEATURE_COLUMNS}.`);
  }
  const namesLength = names.reduce((sum, n) => sum + n.length, 0);
  if (namesLength > MAX_FEATURE_NAMES_LENGTH) {
    throw new TabularDataError('COLUMN_NAMES_TOO_LONG', `The names of the columns besides the target hold ${namesLength} characters together; a model's hold at most ${MAX_FEATURE_NAMES_LENGTH}.`);
  }
  const columns: ColumnSchema[] = [];
  const reports: ColumnReport[] = [];
  const warnings: string[] = [];
  for (const name of names) {
    const valueOf = cellReader(name);
    const vals = t.keep.map((i) => valueOf(rows[i]));
    const d = detectColumn(name, vals, rule);
    columns.push(d.schema);
    reports.push(d.report);
    if (d.warning) warnings.push(d.warning);
  }
  const features = featureSpecs(columns);
  if (features.length === 0) {
    throw new TabularDataError(
      'NO_USABLE_FEATURES',
      'No usable feature column: every column other than the target is empty, constant or identifier-like.',
    );
  }
  const dropped = rows.length - t.keep.length;
  if (dropped > 0) warnings.push(`${dropped} row(s) with an empty target were dropped.`);
  const excluded = reports.filter((r) => !r.used);
  if (excluded.length > 0) {
    warnings.push(`Excluded column(s): ${excluded.map((r) => `${r.name} (${r.note?.replace(/^excluded: /, '')})`).join(', ')}.`);
  }
  for (const r of reports) {
    if (r.used && r.missing > 0.5 * t.keep.length) warnings.push(`Column "${r.name}" is missing in ${r.missing} of ${t.keep.length} rows.`);
  }
  if (t.classes) {
    const counts = new Array<number>(t.classes.length).fill(0);
    for (let i = 0; i < t.y.length; i++) counts[t.y[i]]++;
    counts.forEach((c, k) => {
      if (c < 5) warnings.push(`Class "${String(t.classes?.[k])}" has only ${c} row(s); it will be hard to predict.`);
    });
  }
  if (t.keep.length < 100) warnings.push(`Only ${t.keep.length} usable rows; predictions will be rough.`);
  const report: DataReport = {
    rows_received: rows.length,
    rows_used: t.keep.length,
    rows_dropped_empty_target: dropped,
    task: t.task,
    target,
    ...(t.classes ? { classes: t.classes.map((c) => String(c)) } : {}),
    columns: reports,
    warnings,
  };
  return { report, target: t, columns, features };
}

export function featureSpecs(columns: ColumnSchema[]): FeatureSpec[] {
  const out: FeatureSpec[] = [];
  for (const c of columns) {
    if (!c.used) continue;
    if (c.type === 'numeric' || c.type === 'boolean') out.push({ name: c.name, column: c.name, kind: 'numeric', numCategories: 0 });
    else if (c.type === 'categorical') {
      const k = (c.categories?.length ?? 0) + ((c.otherCode ?? -1) >= 0 ? 1 : 0);
      if (c.rangeMode !== 'replace') out.push({ name: c.name, column: c.name, kind: 'categorical', numCategories: k });
      if (c.rangeValues) out.push({ name: c.rangeMode === 'replace' ? c.name : `${c.name}.range`, column: c.name, kind: 'numeric', numCategories: 0 });
    } else if (c.type === 'date') {
      for (const p of ['year', 'month', 'day', 'weekday'].concat(c.withTime ? ['hour'] : [])) {
        out.push({ name: `${c.name}.${p}`, column: c.name, kind: 'numeric', numCategories: 0 });
      }
    }
  }
  return out;
}

type RowReader = (row: Row, out: unknown[]) => void;
const readers = new WeakMap<ColumnSchema[], RowReader>();

/**
 * A function reading the used columns of a row into `out` (by column index). It is generated with
 * the column names as constants: rows parsed from JSON share one shape, so each read is a named
 * property load the JIT caches, where `row[name]` with a variable name is a dictionary lookup (large
 * batches scored about a third faster this way). Names are embedded as JSON string literals.
 */
function rowReader(columns: ColumnSchema[]): RowReader {
  const cached = readers.get(columns);
  if (cached) return cached;
  const body = columns
    .map((c, ci) => {
      if (!c.used) return '';
      const name = JSON.stringify(c.name);
      // a name of Object.prototype's is read only as the row's own property (see cellReader)
      return c.name in Object.prototype ? `out[${ci}] = Object.hasOwn(row, ${name}) ? row[${name}] : undefined;` : `out[${ci}] = row[${name}];`;
    })
    .join('\n');
  const read = new Function('row', 'out', body) as RowReader;
  readers.set(columns, read);
  return read;
}

/**
 * Encodes rows into a row-major matrix (rows x features), NaN for missing. Unseen categories map to
 * the "other" bucket when the column has one, else to missing.
 */
export function encodeRows(rows: Row[], columns: ColumnSchema[], nFeatures: number, indices?: number[]): Float64Array {
  const n = indices ? indices.length : rows.length;
  const X = new Float64Array(n * nFeatures);
  encodeInto(rows, columns, nFeatures, X, 0, n, indices);
  return X;
}

const lookupsCache = new WeakMap<ColumnSchema[], (Map<string, number> | null)[]>();

function categoryLookups(columns: ColumnSchema[]): (Map<string, number> | null)[] {
  const cached = lookupsCache.get(columns);
  if (cached) return cached;
  const lookups = columns.map((c) => {
    if (c.type !== 'categorical' || !c.used) return null;
    const m = new Map<string, number>();
    (c.categories ?? []).forEach((v, i) => m.set(v, i));
    return m;
  });
  lookupsCache.set(columns, lookups);
  return lookups;
}

/**
 * Encodes `count` rows starting at `start` (or the rows `indices[start..start+count)`) into the
 * first `count` rows of X, which callers reuse across chunks of a large batch.
 */
export function encodeInto(rows: Row[], columns: ColumnSchema[], nFeatures: number, X: Float64Array, start: number, count: number, indices?: number[]): void {
  const lookups = categoryLookups(columns);
  const read = rowReader(columns);
  const values: unknown[] = new Array(columns.length);
  for (let r = 0; r < count; r++) {
    const row = rows[indices ? indices[start + r] : start + r] ?? {};
    read(row, values);
    let f = 0;
    const base = r * nFeatures;
    for (let ci = 0; ci < columns.length; ci++) {
      const c = columns[ci];
      if (!c.used) continue;
      const v = values[ci];
      const miss = isMissing(v);
      switch (c.type) {
        case 'numeric':
          X[base + f++] = miss ? NaN : toNumber(v);
          break;
        case 'boolean':
          X[base + f++] = miss ? NaN : toBool(v);
          break;
        case 'categorical': {
          let code = NaN;
          if (!miss) {
            const k = (lookups[ci] as Map<string, number>).get(String(v));
            if (k !== undefined) code = k;
            else if ((c.otherCode ?? -1) >= 0) code = c.otherCode as number;
          }
          if (c.rangeMode !== 'replace') X[base + f++] = code;
          if (c.rangeValues) X[base + f++] = miss ? NaN : code < (c.categories as string[]).length ? c.rangeValues[code] : rangeValueOf(String(v));
          break;
        }
        case 'date': {
          const d = miss ? null : parseIsoDate(v);
          X[base + f++] = d ? d.year : NaN;
          X[base + f++] = d ? d.month : NaN;
          X[base + f++] = d ? d.day : NaN;
          X[base + f++] = d ? d.weekday : NaN;
          if (c.withTime) X[base + f++] = d ? d.hour : NaN;
          break;
        }
        default:
          break;
      }
    }
  }
}
