import { fitForest, predictForest, predictForestWalk, type Forest } from '../../../engines/tabular/forest';
import { forestLayout, kernelPays, predictForestWasm } from '../../../engines/tabular/forest-wasm';
import { Prng } from '../../../engines/tabular/prng';
import type { InternalTask } from '../../../engines/tabular/train';

/** n rows of F features, some missing (NaN), -0, ±Infinity and repeated values among them; y by task. */
function data(n: number, F: number, task: InternalTask, seed: number): { X: Float64Array; y: Float64Array } {
  const rng = new Prng(seed);
  const X = new Float64Array(n * F);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < F; f++) {
      const u = rng.nextFloat();
      X[i * F + f] = u < 0.08 ? NaN : u < 0.1 ? -0 : u < 0.11 ? (f % 2 ? Infinity : -Infinity) : f % 3 === 2 ? rng.nextInt(4) : rng.nextFloat() * 10 - 5;
    }
    const z = (X[i * F] || 0) - (X[i * F + 1] || 0) + rng.nextFloat() * 3;
    y[i] = task === 'binary' ? +(z > 0) : task === 'multiclass' ? (z < -2 ? 0 : z < 2 ? 1 : 2) : z * 1.7 - 0.3;
  }
  return { X, y };
}

function grow(task: InternalTask, n: number, F: number, trees: number, seed: number): Forest {
  const { X, y } = data(n, F, task, seed);
  const rows = Int32Array.from({ length: n }, (_, i) => i);
  return fitForest(X, F, y, task, task === 'multiclass' ? 3 : 2, rows, trees, seed);
}

/** Every output of `a` and `b` the same bits (Object.is: -0 apart from +0, NaN equal to NaN). */
function expectSameBits(a: Float64Array, b: Float64Array): void {
  expect(a.length).toBe(b.length);
  let differing = 0;
  for (let j = 0; j < a.length; j++) if (!Object.is(a[j], b[j])) differing++;
  expect(differing).toBe(0);
}

describe('the forest walked by the WebAssembly kernel (forest-wasm.ts)', () => {
  it.each([
    ['binary (K = 2)', 'binary'],
    ['regression (K = 1)', 'regression'],
    ['three classes (K = 3, the loop over K)', 'multiclass'],
  ] as const)('%s: the kernel gives the JavaScript walk’s outputs bit for bit over 701 new rows with missing values, ±0 and ±Infinity', (_, task) => {
    const F = 7;
    const forest = grow(task, 500, F, 9, 4);
    // 701 rows: 116 groups of 6 lanes and 5 rows walked one at a time
    const { X } = data(701, F, task, 99);
    const kernel = predictForestWasm(forest, X, 701, F);
    expect(kernel).not.toBeNull();
    expectSameBits(kernel as Float64Array, predictForestWalk(forest, X, 701, F));
    expect(forest.nOutputs).toBe(task === 'regression' ? 1 : task === 'binary' ? 2 : 3);
  });

  it('batches of 2 to 13 rows (fewer than a group of lanes, and a group and some) give the same bits', () => {
    const F = 5;
    const forest = grow('binary', 300, F, 6, 8);
    const { X } = data(40, F, 'binary', 12);
    for (let n = 2; n <= 13; n++) expectSameBits(predictForestWasm(forest, X, n, F) as Float64Array, predictForestWalk(forest, X, n, F));
  });

  it('rows in several blocks, the last one partial, give the same bits (150 features: blocks of 436 rows)', () => {
    const F = 150;
    const forest = grow('regression', 300, F, 5, 21);
    const { X } = data(1000, F, 'regression', 22);
    expectSameBits(predictForestWasm(forest, X, 1000, F) as Float64Array, predictForestWalk(forest, X, 1000, F));
  });

  it('forests taking turns in the memory are copied back in: each call gives its own forest’s bits', () => {
    const F = 6;
    const a = grow('binary', 400, F, 8, 31);
    const b = grow('multiclass', 400, F, 8, 32);
    const c = grow('regression', 400, F, 8, 33);
    const { X } = data(200, F, 'binary', 34);
    for (const forest of [a, b, a, c, c, b, a]) expectSameBits(predictForestWasm(forest, X, 200, F) as Float64Array, predictForestWalk(forest, X, 200, F));
  });

  it('trees that are one leaf (a pure target) give the same bits', () => {
    const F = 3;
    const X = data(50, F, 'regression', 41).X;
    const y = new Float64Array(50).fill(2.5);
    const forest = fitForest(X, F, y, 'regression', 2, Int32Array.from({ length: 50 }, (_, i) => i), 4, 5);
    expect(forest.feature.length).toBe(4);
    expectSameBits(predictForestWasm(forest, X, 50, F) as Float64Array, predictForestWalk(forest, X, 50, F));
  });

  it('a forest whose children are not side by side, or that reads a feature the rows lack, is left to the JavaScript walk, and predictForest still gives its bits', () => {
    // node 0 cuts feature 0 at 0.5: left child node 2, right child node 1 (not left + 1)
    const swapped: Forest = {
      nOutputs: 1,
      treeRoot: Int32Array.of(0),
      feature: Int32Array.of(0, -1, -1),
      threshold: Float64Array.of(0.5, 0, 0),
      left: Int32Array.of(2, 0, 1),
      right: Int32Array.of(1, 0, 0),
      leafValue: Float64Array.of(10, 20),
    };
    expect(forestLayout(swapped)).toBeNull();
    const X = Float64Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? NaN : i / 40));
    expect(predictForestWasm(swapped, X, 40, 1)).toBeNull();
    const out = predictForest(swapped, X, 40, 1);
    expectSameBits(out, predictForestWalk(swapped, X, 40, 1));
    expect(out[0]).toBe(10);
    expect(out[1]).toBe(20);
    const forest = grow('binary', 200, 4, 3, 51);
    expect(predictForestWasm(forest, data(10, 3, 'binary', 1).X, 10, 3)).toBeNull();
  });

  it('kernelPays: never for one row; for two rows of the forest the memory holds; for another forest only when rows × trees reach an eighth of its nodes', () => {
    const F = 4;
    const a = grow('binary', 400, F, 10, 61);
    const b = grow('binary', 400, F, 10, 62);
    const { X } = data(100, F, 'binary', 63);
    predictForestWasm(a, X, 100, F);
    expect(kernelPays(a, 1)).toBe(false);
    expect(kernelPays(a, 2)).toBe(true);
    const enough = Math.ceil(b.feature.length / (8 * 10));
    expect(enough).toBeGreaterThan(2);
    expect(kernelPays(b, enough - 1)).toBe(false);
    expect(kernelPays(b, enough)).toBe(true);
  });
});
