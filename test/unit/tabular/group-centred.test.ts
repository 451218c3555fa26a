import { searchGroupKey, DEFAULT_GROUP_OPTIONS } from '../../../engines/tabular/group';
import { Prng } from '../../../engines/tabular/prng';

/**
 * GroupOptions.centred (bench/RESULTS.md, thirteenth round of issue 15 and engine 13.0.0): the key
 * search's statistic smoothed towards the model's own out-of-fold output. Engine 13.0.0 sets it (4 rows);
 * 11.0.0 and 12.0.0 do not, and their search must stay as it was (engine13.test.ts checks the versions).
 */
describe('the group member\'s key search centred on the model\'s output', () => {
  /**
   * 300 records of (a, b), 4 rows each; m, a column of each row. `effect` of m and `spread` of the
   * records' levels set the outcome's probability; `centre` is the model's output: the probability
   * given m alone (what trees on m hold).
   */
  function data(effect: number, spread: number) {
    const rng = new Prng(11);
    const cols: number[][] = [[], [], []];
    const y: number[] = [];
    const centre: number[] = [];
    const level = Array.from({ length: 300 }, () => (rng.nextFloat() < 0.5 ? spread : -spread));
    for (let r = 0; r < 300; r++) {
      for (let j = 0; j < 4; j++) {
        const m = rng.nextFloat() < 0.5 ? 1 : 0;
        cols[0].push(m);
        cols[1].push(r % 20);
        cols[2].push(Math.floor(r / 20));
        const pm = 0.5 + (m ? effect : -effect);
        y.push(rng.nextFloat() < pm + level[r] ? 1 : 0);
        centre.push(1 - pm, pm);
      }
    }
    const n = y.length;
    const X = new Float64Array(n * 3);
    for (let i = 0; i < n; i++) for (let f = 0; f < 3; f++) X[i * 3 + f] = cols[f][i];
    return { rows: { X, n, F: 3, y: Float64Array.from(y), K: 2, regression: false }, fold: Int32Array.from({ length: n }, (_, i) => i % 5), centre: Float64Array.from(centre) };
  }

  it('leave the search as it was when not asked for, whatever output is passed', () => {
    const { rows, fold, centre } = data(0.25, 0.2);
    const plain = searchGroupKey(rows, fold, 5, DEFAULT_GROUP_OPTIONS);
    const passed = searchGroupKey(rows, fold, 5, DEFAULT_GROUP_OPTIONS, centre);
    expect(passed.columns).toEqual(plain.columns);
    expect(Array.from(passed.gid)).toEqual(Array.from(plain.gid));
    expect(Object.is(passed.loss, plain.loss) && Object.is(passed.base, plain.base)).toBe(true);
  });

  it('still find the columns that name the record', () => {
    const { rows, fold, centre } = data(0, 0.35);
    const key = searchGroupKey(rows, fold, 5, { ...DEFAULT_GROUP_OPTIONS, centred: 4 }, centre);
    expect([...key.columns].sort()).toEqual([1, 2]);
    expect(key.groups).toBe(300);
  });
});
