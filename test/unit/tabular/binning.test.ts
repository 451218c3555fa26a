import { binValue, fitBins, transformBins, MAX_BINS } from '../../../engines/tabular/binning';

describe('binning', () => {
  it('puts missing values in their own bin after the value bins', () => {
    const X = Float64Array.from([1, NaN, 3, 2, NaN, 3]);
    const info = fitBins(X, 6, 1, [0], 255, 1);
    expect(info.numBins[0]).toBe(3);
    const bins = transformBins(info, X, 6, 1);
    expect(Array.from(bins)).toEqual([0, 3, 2, 1, 3, 2]);
    // thresholds sit between distinct values
    expect(Array.from(info.edges[0])).toEqual([1.5, 2.5]);
    expect(binValue(info, 0, 0)).toBe(0);
    expect(binValue(info, 0, 100)).toBe(2);
  });

  it('caps the number of bins at 255 and keeps bins ordered', () => {
    const n = 5000;
    const X = Float64Array.from({ length: n }, (_, i) => (i * 7919) % n);
    const info = fitBins(X, n, 1, [0]);
    expect(info.numBins[0]).toBeLessThanOrEqual(MAX_BINS);
    expect(info.numBins[0]).toBeGreaterThan(200);
    const bins = transformBins(info, X, n, 1);
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => X[a] - X[b]);
    let monotone = true;
    for (let j = 1; j < n; j++) if (bins[order[j]] < bins[order[j - 1]]) monotone = false;
    expect(monotone).toBe(true);
    expect(Math.max(...bins)).toBeLessThan(info.numBins[0]);
  });

  it('merges values so that every bin holds at least min_data_in_bin rows', () => {
    const X = Float64Array.from([1, 1, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6, 7, 7, 7]);
    const info = fitBins(X, X.length, 1, [0], 255, 3);
    const bins = transformBins(info, X, X.length, 1);
    const counts = new Array<number>(info.numBins[0]).fill(0);
    bins.forEach((b) => counts[b]++);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(3);
    expect(info.numBins[0]).toBe(4);
  });

  it('uses category codes as bins and maps unknown codes to the missing bin', () => {
    const X = Float64Array.from([0, 2, 1, NaN]);
    const info = fitBins(X, 4, 1, [3]);
    expect(info.isCategorical[0]).toBe(1);
    expect(Array.from(transformBins(info, X, 4, 1))).toEqual([0, 2, 1, 3]);
    expect(binValue(info, 0, 7)).toBe(3);
  });

  it('handles a column that is entirely missing', () => {
    const X = Float64Array.from([NaN, NaN]);
    const info = fitBins(X, 2, 1, [0]);
    expect(info.numBins[0]).toBe(1);
    expect(Array.from(transformBins(info, X, 2, 1))).toEqual([1, 1]);
  });
});
