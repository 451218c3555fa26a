/**
 * Data shapes the benchmark collections do not hold, each trained by the default engine (seed 0) on
 * synthetic rows and scored on 1,000 more: CPU seconds of the fit and milliseconds of the batch, or
 * the engine's refusal. A check that no shape makes the engine fail or take a pathological time, not an
 * accuracy benchmark.
 *
 *   tsx bench/tabular/shapes.ts [tiny,constant,missing,idtext,manyclasses,wide]
 *
 * tiny: 10 rows; constant: every feature constant (refused); missing: 70 % of cells empty; idtext: an
 * identifier column and a text column of 3,000 values; manyclasses: 100 classes; wide: 500 numeric
 * columns, 5 of them informative.
 */
import { trainTabular, predictRows, type Row } from '../../engines/tabular/index';
import { Prng } from '../../engines/tabular/prng';
import { cpuSeconds } from './measure';

const rng = new Prng(7);
function make(n: number, shape: string): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const r: Row = {};
    let s = 0;
    if (shape === 'wide') {
      for (let f = 0; f < 500; f++) {
        const v = rng.nextFloat();
        r[`c${f}`] = v;
        if (f < 5) s += v;
      }
      r.target = s + rng.nextFloat() > 3 ? 'yes' : 'no';
    } else if (shape === 'manyclasses') {
      const x = rng.nextFloat() * 100;
      r.x = x;
      r.y = rng.nextFloat();
      r.target = `k${Math.floor(x)}`;
    } else if (shape === 'idtext') {
      r.id = `user-${i}-${rng.nextInt(1e9)}`;
      r.city = `city${rng.nextInt(3000)}`;
      r.x = rng.nextFloat();
      r.target = (r.x as number) + (Number((r.city as string).slice(4)) % 7) / 7 + rng.nextFloat() * 0.3;
    } else if (shape === 'missing') {
      for (let f = 0; f < 20; f++) r[`c${f}`] = rng.nextFloat() < 0.7 ? null : rng.nextFloat();
      r.target = rng.nextFloat() > 0.5 ? 1 : 0;
    } else if (shape === 'tiny') {
      r.a = rng.nextFloat();
      r.target = i % 2 === 0 ? 'a' : 'b';
    } else if (shape === 'constant') {
      r.a = 1;
      r.b = 'x';
      r.target = rng.nextFloat();
    }
    rows.push(r);
  }
  return rows;
}
const cases: Array<[string, number, 'classification' | 'regression']> = [
  ['tiny', 10, 'classification'],
  ['constant', 500, 'regression'],
  ['missing', 3000, 'classification'],
  ['idtext', 8000, 'regression'],
  ['manyclasses', 5000, 'classification'],
  ['wide', 5000, 'classification'],
];
for (const [shape, n, task] of cases.filter((c) => !process.argv[2] || process.argv[2].split(',').includes(c[0]))) {
  const rows = make(n, shape);
  const t0 = cpuSeconds();
  try {
    const { model } = trainTabular(rows, { target: 'target', task, seed: 0 });
    const t1 = cpuSeconds();
    const test = make(1000, shape).map((r) => {
      const c = { ...r };
      delete c.target;
      return c;
    });
    predictRows(model, test);
    console.log(`${shape}: ${n} rows, fit ${(t1 - t0).toFixed(1)} s CPU, predict 1,000 rows ${((cpuSeconds() - t1) * 1000).toFixed(0)} ms`);
  } catch (err) {
    console.log(`${shape}: ${n} rows, error ${(err as Error).message}`);
  }
}
