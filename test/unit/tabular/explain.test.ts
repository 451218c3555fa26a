import { permutationImportance } from '../../../engines/tabular/explain';
import { prepare, resolveConfigV12 } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import { fitCore } from '../../../engines/tabular/train';
import type { Row } from '../../../engines/tabular/index';

/**
 * 39 input columns (more than the 32 of one word of column bits): numbers with missing values, a
 * text column, a date column (several encoded features), and noise columns the trees may not read.
 */
function wideRows(n: number, seed: number, kind: 'binary' | 'multiclass' | 'regression'): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const row: Row = {};
    for (let c = 0; c < 37; c++) row[`x${c}`] = rng.nextFloat() < 0.05 ? null : rng.nextFloat() * 10;
    const color = ['red', 'green', 'blue', 'amber'][rng.nextInt(4)];
    row.color = rng.nextFloat() < 0.05 ? null : color;
    const month = 1 + rng.nextInt(12);
    row.day = `2024-${String(month).padStart(2, '0')}-${String(1 + rng.nextInt(28)).padStart(2, '0')}`;
    const z = (row.x0 === null ? 5 : (row.x0 as number)) - (row.x33 === null ? 5 : (row.x33 as number)) + (color === 'red' ? 3 : 0) + (month > 6 ? 1.5 : 0) + rng.nextFloat() * 3;
    row.target = kind === 'binary' ? (z > 2 ? 'yes' : 'no') : kind === 'multiclass' ? (z < 0 ? 'low' : z < 4 ? 'mid' : 'high') : z * 2;
    rows.push(row);
  }
  return rows;
}

/** Importances of the same fold models (fewer rounds than the default: the model's quality is not the point) by both ways of scoring. */
function importances(kind: 'binary' | 'multiclass' | 'regression'): { whole: Map<string, number>; reuse: Map<string, number> } {
  const p = prepare(wideRows(400, 11, kind), 'target');
  const core = fitCore({ X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses }, resolveConfigV12(p, { maxRounds: 80 }), 3);
  const run = (scoring: 'reuse' | 'whole') => permutationImportance(p.X, p.F, p.y, p.task, p.nClasses, core.foldModels, p.analysis.features, 7, 2000, scoring);
  return { whole: run('whole'), reuse: run('reuse') };
}

describe('permutation importance', () => {
  it.each(['binary', 'multiclass', 'regression'] as const)(
    'reusing the rows\' own leaves where a path tests no feature of the column gives every column exactly the importance of scoring each permuted copy whole (%s, 39 columns)',
    (kind) => {
      const { whole, reuse } = importances(kind);
      expect(whole.size).toBe(39);
      expect([...reuse.keys()]).toEqual([...whole.keys()]);
      for (const [column, value] of whole) expect(Object.is(reuse.get(column), value)).toBe(true);
      // the signal's columns matter (the comparison is not between zeros): x0, x33 (past the first
      // word of column bits), the text column and the date column
      for (const column of ['x0', 'x33', 'color', 'day']) expect(whole.get(column)).toBeGreaterThan(0);
    },
  );
});
