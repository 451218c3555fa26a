/**
 * Experiment (bench/RESULTS.md, thirteenth round of issue 15): engine 11's group member on a key given
 * by name (`--key a+b+c`, the encoded features' names) instead of the one its search finds. On each
 * benchmark fold, 12.0.0 is trained; the member's out-of-fold statistics on that key are centred on the
 * model's out-of-fold outputs (groupOofs), (s, w) is chosen by out-of-fold ROC AUC as addGroupMember
 * does for binary tasks, and the key's table mixes into the model's test outputs (mixGroup). No gain
 * gate. Binary sets.
 *
 *   tsx bench/tabular/groupkey.ts --key a+b+c [--data DIR] --only a,b [--seed 0]
 */
import { categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { outputsFromMatrix } from '../../engines/tabular/model';
import { encodeRows } from '../../engines/tabular/schema';
import { rawToOutput } from '../../engines/tabular/train';
import { fitGroupTable, groupOofs, mixGroup, SMOOTH_GRID } from '../../engines/tabular/group';
import { rocAuc } from '../../engines/tabular/metrics';
import { DEV_DATA_DIR, foldSplit, loadDataset, manifestEntries } from './datasets';
import { arg } from './cli';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = new Set((arg('only') as string).split(','));
const seed = Number(arg('seed') ?? 0);
const keyNames = (arg('key') as string).split('+');
for (const entry of manifestEntries(dataDir, only)) {
  const d = loadDataset(dataDir, entry, 5, seed);
  const a: number[] = [], b: number[] = [];
  const sw: string[] = [];
  for (let f = 0; f < 5; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const p = prepare(train, 'target', 'classification', categoryRuleFor('12.0.0'));
    const r = trainPrepared(p, { engineVersion: '12.0.0', seed });
    const flip = String(p.analysis.target.classes?.[1]) !== d.classKeys[1];
    const yT = flip ? yTest.map((v) => 1 - v) : yTest;
    const Xt = encodeRows(test, p.analysis.columns, p.F);
    const nt = test.length;
    const outT = outputsFromMatrix(r.model, Xt, nt);
    a.push(rocAuc(yT, Array.from({ length: nt }, (_, i) => outT[i * 2 + 1])));
    const cols = keyNames.map((k) => p.analysis.features.findIndex((x) => x.name === k));
    const m = new Map<string, number>();
    const gid = Int32Array.from({ length: p.n }, (_, i) => { const k = cols.map((c) => p.X[i * p.F + c]).join(','); let g = m.get(k); if (g === undefined) { g = m.size; m.set(k, g); } return g; });
    const fold = new Int32Array(p.n).fill(-1);
    r.core.foldModels.forEach((fm, q) => fm.validRows.forEach((i) => (fold[i] = q)));
    const modelOut = rawToOutput(p.task, r.core.oofRaw, p.n, p.nClasses);
    const members = groupOofs(gid, m.size, p.y, fold, r.core.foldModels.length, 2, false, SMOOTH_GRID, modelOut);
    const held: number[] = []; for (let i = 0; i < p.n; i++) if (fold[i] >= 0) held.push(i);
    const yh = held.map((i) => p.y[i]);
    const aucOf = (o: Float64Array) => rocAuc(yh, held.map((i) => o[i * 2 + 1]));
    let best = { v: aucOf(modelOut), s: 0, w: 0 };
    members.forEach((mem, q) => { for (let st = 1; st <= 20; st++) { const w = st / 20; const mix = modelOut.map((v, j) => (1 - w) * v + w * mem[j]); const v = aucOf(mix); if (v > best.v) best = { v, s: SMOOTH_GRID[q], w }; } });
    sw.push(`s${best.s} w${best.w}`);
    if (best.w > 0) {
      const table = fitGroupTable({ X: p.X, n: p.n, F: p.F, y: p.y, K: 2, regression: false }, cols, best.s);
      mixGroup({ ...table, weight: best.w }, Xt, nt, p.F, outT);
    }
    b.push(rocAuc(yT, Array.from({ length: nt }, (_, i) => outT[i * 2 + 1])));
  }
  const mean = (x: number[]) => x.reduce((s, v) => s + v, 0) / x.length;
  console.log(d.name, 'model', mean(a).toFixed(4), 'with group member on the key', mean(b).toFixed(4), sw.join(' '));
}
