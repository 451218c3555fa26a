import { newId, newIdRun, randomBase62 } from '../../../services/ids';

describe('ids', () => {
  it('makes prefixed 22-character base62 ids, all different', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('request'));
    expect(ids.every((id) => /^req_[0-9A-Za-z]{22}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws every base62 character about equally often (chi-square well below the 0.1% critical value)', () => {
    const text = randomBase62(620_000);
    const counts = new Map<string, number>();
    for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = text.length / 62;
    const chi2 = [...counts.values()].reduce((sum, n) => sum + ((n - expected) * (n - expected)) / expected, 0);
    // 61 degrees of freedom: the 0.1% critical value is about 100.9.
    expect(chi2).toBeLessThan(100.9);
  });

  it('makes a run of ids of the same shape that share one random stem and sort in their order', () => {
    const { stem, ids: run } = newIdRun('request', 5_000);
    expect(stem).toMatch(/^req_[0-9A-Za-z]{18}$/);
    expect(run.every((id) => /^req_[0-9A-Za-z]{22}$/.test(id) && id.startsWith(stem))).toBe(true);
    expect(new Set(run).size).toBe(run.length);
    expect([...run].sort()).toEqual(run);
    const stems = new Set(Array.from({ length: 2_000 }, () => newIdRun('request', 1).stem));
    expect(stems.size).toBe(2_000);
  });

  it('numbers a run in base62 and refuses one longer than its four position digits can number', () => {
    const run = newIdRun('request', 63).ids;
    expect(run[0]).toMatch(/0000$/);
    expect(run[61]).toMatch(/000z$/);
    expect(run[62]).toMatch(/0010$/);
    expect(() => newIdRun('request', 62 ** 4 + 1)).toThrow(RangeError);
  });
});
