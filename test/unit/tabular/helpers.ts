import { Prng } from '../../../engines/tabular/prng';
import type { Row } from '../../../engines/tabular/index';

/** Rows with a genuine signal: target depends on x1, x2 and the category. */
export function signalRows(n: number, seed: number, kind: 'binary' | 'multiclass' | 'regression' = 'binary'): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const x1 = rng.nextFloat() * 10;
    const x2 = rng.nextFloat() * 10;
    const color = ['red', 'green', 'blue'][rng.nextInt(3)];
    const noise = rng.nextFloat() * 4 - 2;
    const z = x1 - x2 + (color === 'red' ? 3 : 0) + noise;
    let target: unknown;
    if (kind === 'binary') target = z > 1 ? 'yes' : 'no';
    else if (kind === 'multiclass') target = z < -2 ? 'low' : z < 3 ? 'mid' : 'high';
    else target = z * 2 + 5;
    rows.push({ x1, x2: rng.nextFloat() < 0.1 ? null : x2, color, x3: rng.nextFloat(), target });
  }
  return rows;
}
