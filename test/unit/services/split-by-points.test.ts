import { splitEvenly } from '../../../services/engine-pool';
import { splitByPoints } from '../../../services/series-checks';

const series = (...lengths: number[]) => lengths.map((n, i) => ({ id: i, values: new Array<number>(n).fill(0) }));

describe('splitByPoints', () => {
  it('keeps every series once, in order, in at most the asked number of parts', () => {
    const input = series(50, 200, 30, 30, 120, 80, 10);
    for (const parts of [1, 2, 3, 7, 10]) {
      const out = splitByPoints(input, parts);
      expect(out.length).toBeLessThanOrEqual(parts);
      expect(out.flat().map((s) => s.id)).toEqual(input.map((s) => s.id));
      expect(out.every((part) => part.length > 0)).toBe(true);
    }
  });

  it('balances equal series evenly between two threads', () => {
    const out = splitByPoints(series(...new Array<number>(100).fill(200)), 2);
    expect(out.map((part) => part.length)).toEqual([50, 50]);
  });
});

describe('splitEvenly', () => {
  it('keeps every row once, in order, in parts whose lengths differ by at most one', () => {
    const rows = Array.from({ length: 1001 }, (_, i) => i);
    for (const parts of [1, 2, 3, 8]) {
      const out = splitEvenly(rows, parts);
      expect(out).toHaveLength(parts);
      expect(out.flat()).toEqual(rows);
      const lengths = out.map((part) => part.length);
      expect(Math.max(...lengths) - Math.min(...lengths)).toBeLessThanOrEqual(1);
    }
  });

  it('never makes an empty part when there are fewer rows than parts', () => {
    expect(splitEvenly([1, 2], 4)).toEqual([[1], [2]]);
  });
});
