/**
 * Batch prediction throughput of a 100-tree model (31 leaves per tree, binary, 20 numeric and
 * 2 categorical features) on one core: rows/second on already-encoded rows (the flat predictor)
 * and from row objects through predictRows (encoding included); median and best of 5 passes after
 * a warm-up pass.
 */
import { predictRows, trainTabular, type EngineVersion, type Row } from '../../engines/tabular/index';
import { encodeForModel } from '../../engines/tabular/model';
import { predictRawFast } from '../../engines/tabular/compiled';
import { Prng } from '../../engines/tabular/prng';

export interface ThroughputResult {
  trees: number;
  rows: number;
  /** median of 5 passes (best of 5 alongside) */
  rowsPerSecondMatrix: number;
  rowsPerSecondMatrixBest: number;
  rowsPerSecondObjects: number;
  rowsPerSecondObjectsBest: number;
}

function makeRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const r: Row = {};
    let s = 0;
    for (let f = 0; f < 20; f++) {
      const v = rng.nextFloat() * 2 - 1;
      r[`x${f}`] = rng.nextFloat() < 0.02 ? null : v;
      s += v * Math.sin(f + 1);
    }
    const c = ['a', 'b', 'c', 'd', 'e'][rng.nextInt(5)];
    r.cat1 = c;
    r.cat2 = `k${rng.nextInt(12)}`;
    r.target = s + (c === 'b' ? 1 : 0) + rng.nextFloat() > 0.5 ? 1 : 0;
    rows.push(r);
  }
  return rows;
}

/** `engineVersion` 4.0.0: every third of the 100 trees is a symmetric tree of depth 5. */
export function measureThroughput(nRows = 200000, engineVersion?: EngineVersion): ThroughputResult {
  const train = makeRows(5000, 1);
  const trained = trainTabular(train, {
    target: 'target',
    seed: 1,
    engineVersion,
    // one member tree set of 100 trees (engine 2 merges its members' sets; their cost adds up)
    config: { members: ['leafwise'], folds: 1, models: 1, maxRounds: 100, earlyStoppingRounds: 1_000_000, learningRate: 0.1, grower: { minDataInLeaf: 5 } },
  });
  const model = trained.model;
  const rows = makeRows(nRows, 2);
  const X = encodeForModel(model, rows);
  // one full pass to compile and warm up the JIT, then the median and best of 5 timed passes
  const time = (fn: () => void): number => {
    const t0 = process.hrtime.bigint();
    fn();
    return Number(process.hrtime.bigint() - t0) / 1e9;
  };
  const rate = (fn: () => void): { median: number; best: number } => {
    fn();
    const r = Array.from({ length: 5 }, () => nRows / time(fn)).sort((a, b) => a - b);
    return { median: r[2], best: r[4] };
  };
  const matrix = rate(() => predictRawFast(model.predictor, X, nRows));
  const objects = rate(() => predictRows(model, rows));
  return {
    trees: model.predictor.treeRoot.length,
    rows: nRows,
    rowsPerSecondMatrix: matrix.median,
    rowsPerSecondMatrixBest: matrix.best,
    rowsPerSecondObjects: objects.median,
    rowsPerSecondObjectsBest: objects.best,
  };
}

if (require.main === module) {
  const i = process.argv.indexOf('--engine-version');
  const r = measureThroughput(200000, i >= 0 ? (process.argv[i + 1] as EngineVersion) : undefined);
  console.log(JSON.stringify(r));
}
