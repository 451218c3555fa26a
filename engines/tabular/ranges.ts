/**
 * Text labels that name a numeric range or bound ("40-49", "15 to 19 cm", "<0", ">= 200", "65+",
 * "10+ years", "9 or more", "under 18", "[10, 20)", "0<=X<200", "$1,000-$4,999") read as one number:
 * a range's midpoint, an open bound at its bound. Many datasets store binned numbers so; as
 * categories their order is lost to the trees' subset splits. A column whose every distinct label
 * reads so can get a derived ordered feature beside its categories (schema.ts, CategoryRule.ranges).
 * The number comes from the label's text alone, never from the rows' targets.
 */

const NUM = String.raw`[-+]?(?:\d+(?:\.\d*)?|\.\d+)`;
/** A number with an optional currency sign before it. */
const N = String.raw`[$€£]?\s*(${NUM})`;
/** Closing parts of an open bound that do not change its value ("+", "or more", "and over", "years and older"). */
const ABOVE_WORDS = String.raw`(?:\+|\s*(?:or|and)\s+(?:more|over|above|older|greater|higher|up)|\s*plus)`;
const BELOW_WORDS = String.raw`(?:\s*(?:or|and)\s+(?:less|under|below|younger|fewer|lower))`;

const NUMBER_WORDS: Record<string, number> = {
  zero: 0, none: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18,
  nineteen: 19, twenty: 20,
};

/** A label's numeric value and whether it is a plain number (no range or bound). */
export interface RangeValue {
  value: number;
  plain: boolean;
}

/** A range's midpoint; NaN when its ends are out of order ("2020-01" is a date, "3-1" a score). */
function mid(m: RegExpExecArray): number {
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a <= b ? (a + b) / 2 : NaN;
}

const PATTERNS: Array<{ re: RegExp; value: (m: RegExpExecArray) => number }> = [
  // a-b, a to b, between a and b, from a to b, a through b
  { re: new RegExp(String.raw`^(?:between\s+|from\s+)?${N}\s*(?:-|to|and|through|thru)\s*${N}$`), value: mid },
  // intervals: [a, b), (a,b], [a;b]
  { re: new RegExp(String.raw`^[\[(]\s*${N}\s*[,;]\s*${N}\s*[\])]$`), value: mid },
  // open intervals: (-inf, a], [a, inf)
  { re: new RegExp(String.raw`^[\[(]\s*-\s*inf(?:inity)?\s*[,;]\s*${N}\s*[\])]$`), value: (m) => Number(m[1]) },
  { re: new RegExp(String.raw`^[\[(]\s*${N}\s*[,;]\s*\+?\s*inf(?:inity)?\s*[\])]$`), value: (m) => Number(m[1]) },
  // a <= x < b, a < x <= b (any single word or letter as the variable)
  { re: new RegExp(String.raw`^${N}\s*<=?\s*[a-z_][a-z_0-9.]*\s*<=?\s*${N}$`), value: mid },
  // bounds: <a, <=a, >a, >=a, ≤, ≥, x < a, x >= a
  { re: new RegExp(String.raw`^(?:[a-z_][a-z_0-9.]*\s*)?(?:<=?|>=?|≤|≥|=<|=>)\s*${N}$`), value: (m) => Number(m[1]) },
  // words before: under a, below a, less than a, fewer than a, up to a, over a, above a, more than a, at least a, at most a
  { re: new RegExp(String.raw`^(?:under|below|over|above|(?:less|fewer|more|greater|older|younger)\s+than|up\s+to|at\s+(?:least|most))\s+${N}$`), value: (m) => Number(m[1]) },
  // words after: a+, a or more, a and over, a plus, a or less, a and under
  { re: new RegExp(String.raw`^${N}${ABOVE_WORDS}$`), value: (m) => Number(m[1]) },
  { re: new RegExp(String.raw`^${N}${BELOW_WORDS}$`), value: (m) => Number(m[1]) },
];

const PLAIN_RE = new RegExp(String.raw`^${N}$`);

/** A run of letters (a unit: "years", "cm", "kg", "%") after the last number, removed. */
const UNIT_TAIL_RE = /\s*(?:%|[a-z]+\.?(?:\s+[a-z]+\.?){0,2})$/;

function normalise(label: string): string {
  let s = label.trim().toLowerCase();
  s = s.replace(/[\u2012\u2013\u2014\u2015\u2212]/g, '-');
  // thousands separators: 1,000 and 12,500,000 (a comma followed by exactly three digits and no further digit)
  s = s.replace(/(\d),(?=\d{3}(?!\d))/g, '$1');
  s = s.replace(/\s+/g, ' ');
  return s;
}

/** Number words ("three", "nine or more") replaced by digits, as whole words only. */
function numberWords(s: string): string {
  return s.replace(/[a-z]+/g, (w) => (w in NUMBER_WORDS ? String(NUMBER_WORDS[w]) : w));
}

function match(s: string): RangeValue | null {
  const plain = PLAIN_RE.exec(s);
  if (plain) return { value: Number(plain[1]), plain: true };
  for (const p of PATTERNS) {
    const m = p.re.exec(s);
    if (m) {
      const v = p.value(m);
      return Number.isFinite(v) ? { value: v, plain: false } : null;
    }
  }
  return null;
}

/**
 * The number a range or bound label names, or null when the label is not one. Units after the numbers
 * ("15-19 cm", "10+ years") are ignored; so are units after the first number of a range ("40 years -
 * 49 years" reads as "40-49").
 */
export function parseRangeLabel(label: string): RangeValue | null {
  if (label.length > 64) return null;
  let s = numberWords(normalise(label));
  if (!/\d/.test(s)) return null;
  const direct = match(s);
  if (direct) return direct;
  // units: after a range's numbers and after the label's last number
  s = s.replace(/(\d)\s*(?:%|[a-z]+\.?)\s*(?=-|to\b)/g, '$1 ');
  const tail = UNIT_TAIL_RE.exec(s);
  if (tail && tail.index > 0) {
    const before = s.slice(0, tail.index);
    // only after a number or a "+" (not "5 or more" whose words the patterns read)
    if (/[\d+]$/.test(before)) {
      const r = match(before.trim());
      if (r) return r;
    }
  }
  return match(s.trim());
}

/** At least this many distinct labels make a column of ranges (two labels carry no order beyond a split). */
export const MIN_RANGE_LABELS = 3;

/**
 * The values of a column's distinct labels when every one reads as a range, bound or number and at
 * least one is a range or bound (else the column would be numeric), and there are at least
 * MIN_RANGE_LABELS of them with at least MIN_RANGE_LABELS distinct values; otherwise null.
 */
export function rangeColumnValues(labels: string[]): number[] | null {
  if (labels.length < MIN_RANGE_LABELS) return null;
  const values: number[] = [];
  let ranged = false;
  for (const l of labels) {
    const r = parseRangeLabel(l);
    if (!r) return null;
    if (!r.plain) ranged = true;
    values.push(r.value);
  }
  if (!ranged || new Set(values).size < MIN_RANGE_LABELS) return null;
  return values;
}

/** The derived value of one cell: the label's number, NaN for a label that does not read as one. */
export function rangeValueOf(label: string): number {
  const r = parseRangeLabel(label);
  return r ? r.value : NaN;
}
