/**
 * Two variants of our engine on the benchmark's folds, trained in the same process and alternated
 * (variant A first on even folds, B first on odd ones), so that their fit times compare on a shared
 * machine whose load changes by the minute: fit times are this process's CPU seconds (user + system).
 * Scores are run.ts's (mean over the folds of ROC AUC, log loss or RMSE), on the same folds and seed.
 * Per set it prints both scores, whether B is better, worse or the same, whether the two models of
 * every fold are byte-identical (but for their version and format number), each variant's group key per fold, and the
 * summed fit CPU seconds, and the forest member's weight in each fold's model when either variant has one
 * (and the kNN member's fit: kept or dropped, its weight, out-of-fold AUC gain and k).
 *
 *   tsx bench/tabular/abpair.ts [--data DIR] [--only a,b] [--min-rows 1000] [--seed 0] [--folds 5]
 *     [--a 12.0.0] [--a-config JSON] [--b 12.0.0] [--b-config JSON] [--search-time] [--json FILE]
 *
 * `--search-time`: on each fold where the group member can act, also times the group member's key
 * search alone, plain and centred on the model's out-of-fold outputs (GroupOptions.centred of
 * variant B's configuration, default 4), on variant A's folds: the whole fit's difference is small
 * against its noise.
 */
import * as fs from 'fs';
import { serialiseModel, type EngineConfigOverride, type EngineVersion, type TabularModel } from '../../engines/tabular/index';
import { groupOutputs, searchGroupKey, DEFAULT_GROUP_OPTIONS } from '../../engines/tabular/group';
import { categoryRuleFor, prepare, trainPrepared } from '../../engines/tabular/pipeline';
import { rawToOutput } from '../../engines/tabular/train';
import { DEV_DATA_DIR, compareScores, foldSplit, loadDataset, manifestEntries, scorePredictions } from './datasets';
import { arg } from './cli';
import { cpuSeconds, mean } from './measure';
import { predictRows } from '../../engines/tabular/index';

const dataDir = arg('data') ?? DEV_DATA_DIR;
const only = arg('only') ? new Set((arg('only') as string).split(',')) : null;
const minRows = Number(arg('min-rows') ?? 1000);
const seed = Number(arg('seed') ?? 0);
const nFolds = Number(arg('folds') ?? 5);
const versionA = (arg('a') ?? '12.0.0') as EngineVersion;
const versionB = (arg('b') ?? '12.0.0') as EngineVersion;
const configA = arg('a-config') ? (JSON.parse(arg('a-config') as string) as EngineConfigOverride) : undefined;
const configB = arg('b-config') ? (JSON.parse(arg('b-config') as string) as EngineConfigOverride) : undefined;
const searchTime = process.argv.includes('--search-time');
const centredWeight = configB?.group?.centred ?? 4;

const sum = { a: 0, b: 0, searchPlain: 0, searchCentred: 0 };
const counts = { better: 0, worse: 0, same: 0 };
const out: unknown[] = [];
for (const entry of manifestEntries(dataDir, only)) {
  if (Number(entry.rows) < minRows) continue;
  const d = loadDataset(dataDir, entry, nFolds, seed);
  const task = d.task === 'regression' ? ('regression' as const) : ('classification' as const);
  const scores = { a: [] as number[], b: [] as number[] };
  const fit = { a: 0, b: 0 };
  const keys = { a: [] as string[], b: [] as string[] };
  // the forest member's weight in each fold's model ('-' without a forest part)
  const forestW = { a: [] as string[], b: [] as string[] };
  // the kNN member's weight and k in each fold's model ('-' without a kNN part)
  const knnW = { a: [] as string[], b: [] as string[] };
  let identical = true;
  let searchPlain = 0;
  let searchCentred = 0;
  for (let f = 0; f < nFolds; f++) {
    const { train, test, yTest } = foldSplit(d, f);
    const run = (v: EngineVersion, c: EngineConfigOverride | undefined): { model: TabularModel; s: number; key: string; knn: string } => {
      const t0 = cpuSeconds();
      // trainTabular's steps (prepare, trainPrepared), so that the kNN member's fit is seen
      const r = trainPrepared(prepare(train, 'target', task, categoryRuleFor(v, c?.categories)), { engineVersion: v, seed, config: c });
      const s = cpuSeconds() - t0;
      const kn = r.knn;
      const knn = kn ? `${r.model.knn ? 'kept' : 'drop'} w${kn.weight} g${(kn.gain ?? NaN).toFixed(4)}${r.model.knn ? ` k${r.model.knn.k}` : ''}${kn.noGain !== undefined ? ` q${kn.noGain.toFixed(3)} sd${(kn.gainSd ?? NaN).toFixed(4)}` : ''}${kn.cvGain !== undefined ? ` cv${kn.cvGain.toFixed(4)}` : ''}${kn.foldPowers ? ` p${kn.foldPowers.join('/')}` : ''}` : '-';
      const g = r.model.group;
      const key = g ? Array.from(g.columns, (c) => r.model.features[c].name).join('+') + ` (s ${g.smooth}, w ${g.weight})` : '-';
      return { model: r.model, s, key, knn };
    };
    const [ra, rb] = f % 2 === 0
      ? ((): [ReturnType<typeof run>, ReturnType<typeof run>] => { const a = run(versionA, configA); return [a, run(versionB, configB)]; })()
      : ((): [ReturnType<typeof run>, ReturnType<typeof run>] => { const b = run(versionB, configB); return [run(versionA, configA), b]; })();
    fit.a += ra.s;
    fit.b += rb.s;
    keys.a.push(ra.key);
    keys.b.push(rb.key);
    forestW.a.push(ra.model.forest ? String(ra.model.forest.weight) : '-');
    forestW.b.push(rb.model.forest ? String(rb.model.forest.weight) : '-');
    knnW.a.push(ra.knn);
    knnW.b.push(rb.knn);
    scores.a.push(scorePredictions(d, yTest, predictRows(ra.model, test)));
    scores.b.push(scorePredictions(d, yTest, predictRows(rb.model, test)));
    // but for their version and artefact format number (17.0.0 writes format 5 where 16.0.0 writes 4)
    if (serialiseModel({ ...ra.model, engine: rb.model.engine, formatVersion: rb.model.formatVersion }) !== serialiseModel(rb.model)) identical = false;
    if (searchTime && train.length >= DEFAULT_GROUP_OPTIONS.minRows) {
      const p = prepare(train, 'target', task, categoryRuleFor(versionA, configA?.categories));
      const r = trainPrepared(p, { engineVersion: versionA, seed, config: configA });
      const fold = new Int32Array(p.n).fill(-1);
      r.core.foldModels.forEach((fm, m) => fm.validRows.forEach((i) => (fold[i] = m)));
      // at least 1,000 rows: no forest member, so the model's out-of-fold outputs are its core's
      const centre = rawToOutput(p.task, r.core.oofRaw, p.n, p.nClasses);
      const rows = { X: p.X, n: p.n, F: p.F, y: p.y, K: groupOutputs(p.task, p.nClasses), regression: p.task === 'regression' };
      const nf = r.core.foldModels.length;
      const time = (opts: typeof DEFAULT_GROUP_OPTIONS, c?: Float64Array): number => {
        const t0 = cpuSeconds();
        searchGroupKey(rows, fold, nf, opts, c);
        return cpuSeconds() - t0;
      };
      // alternated too
      if (f % 2 === 0) {
        searchPlain += time(DEFAULT_GROUP_OPTIONS);
        searchCentred += time({ ...DEFAULT_GROUP_OPTIONS, centred: centredWeight }, centre);
      } else {
        searchCentred += time({ ...DEFAULT_GROUP_OPTIONS, centred: centredWeight }, centre);
        searchPlain += time(DEFAULT_GROUP_OPTIONS);
      }
    }
  }
  const sa = mean(scores.a);
  const sb = mean(scores.b);
  const cmp = compareScores(d.task, sa, sb);
  const verdict = cmp > 0 ? 'better' : cmp < 0 ? 'worse' : 'same';
  counts[verdict]++;
  sum.a += fit.a;
  sum.b += fit.b;
  sum.searchPlain += searchPlain;
  sum.searchCentred += searchCentred;
  const digits = d.task === 'regression' ? 4 : 4;
  console.log(`${d.name.padEnd(20)} ${d.task.padEnd(10)} A ${sa.toFixed(digits)} B ${sb.toFixed(digits)} ${verdict.padEnd(6)} ${identical ? 'identical' : 'differ   '} fit ${fit.a.toFixed(1)} / ${fit.b.toFixed(1)} s${searchTime ? ` search ${searchPlain.toFixed(2)} / ${searchCentred.toFixed(2)} s` : ''}`);
  if (!identical || keys.a.some((k) => k !== '-') || keys.b.some((k) => k !== '-')) {
    console.log(`  A keys: ${keys.a.join(' | ')}`);
    console.log(`  B keys: ${keys.b.join(' | ')}`);
  }
  if (forestW.a.some((w) => w !== '-') || forestW.b.some((w) => w !== '-')) console.log(`  forest weights A: ${forestW.a.join(' ')}; B: ${forestW.b.join(' ')}`);
  if (knnW.a.some((w) => w !== '-') || knnW.b.some((w) => w !== '-')) console.log(`  kNN A: ${knnW.a.join(' | ')}; B: ${knnW.b.join(' | ')}`);
  out.push({ name: d.name, task: d.task, rows: d.rows.length, a: sa, b: sb, a_folds: scores.a, b_folds: scores.b, verdict, identical, fit_a: fit.a, fit_b: fit.b, keys_a: keys.a, keys_b: keys.b, forest_a: forestW.a, forest_b: forestW.b, knn_a: knnW.a, knn_b: knnW.b, ...(searchTime ? { search_plain: searchPlain, search_centred: searchCentred } : {}) });
}
console.log(`B better ${counts.better}, worse ${counts.worse}, same ${counts.same}; fit CPU A ${sum.a.toFixed(1)} s, B ${sum.b.toFixed(1)} s (B/A ${(sum.b / sum.a).toFixed(4)})${searchTime ? `; key search plain ${sum.searchPlain.toFixed(2)} s, centred ${sum.searchCentred.toFixed(2)} s` : ''}`);
const jsonOut = arg('json');
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ a: versionA, a_config: configA ?? null, b: versionB, b_config: configB ?? null, seed, folds: nFolds, min_rows: minRows, counts, fit_a: sum.a, fit_b: sum.b, search_plain: sum.searchPlain, search_centred: sum.searchCentred, datasets: out }, null, 2));
