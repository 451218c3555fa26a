import { trainTabular, predictRows, type Row } from '../../engines/tabular/index';
import { encodeForModel, outputsFromMatrix } from '../../engines/tabular/model';
import { predictRawFast } from '../../engines/tabular/compiled';
import { predictForest } from '../../engines/tabular/forest';
import { Prng } from '../../engines/tabular/prng';
const rng = new Prng(7);
const make = (n: number): Row[] => Array.from({ length: n }, () => {
  const r: Row = {}; let s = 0;
  for (let f = 0; f < 500; f++) { const v = rng.nextFloat(); r[`c${f}`] = v; if (f < 5) s += v; }
  r.target = s + rng.nextFloat() > 3 ? 'yes' : 'no'; return r;
});
const rows = make(5000);
let t = performance.now();
const { model } = trainTabular(rows, { target: 'target', task: 'classification', seed: 0 });
console.log('fit ms', performance.now() - t);
const m = model as unknown as Record<string, unknown>;
console.log('parts', Object.keys(m).filter((k) => m[k] != null), 'trees', model.predictor.treeRoot.length, 'nodes', model.predictor.nodeFeature.length, 'forest', model.forest?.treeRoot.length, model.forest?.feature.length, 'w', model.forest?.weight, 'linear', !!model.linear, 'knn', !!model.knn, 'group', !!model.group);
const test = make(1000).map((r) => { const c = { ...r }; delete c.target; return c; });
for (let k = 0; k < 3; k++) {
  t = performance.now(); const X = encodeForModel(model, test); const te = performance.now() - t;
  t = performance.now(); predictRawFast(model.predictor, X, 1000); const tr = performance.now() - t;
  t = performance.now(); if (model.forest) predictForest(model.forest, X, 1000, model.features.length); const tf = performance.now() - t;
  t = performance.now(); outputsFromMatrix(model, X, 1000); const to = performance.now() - t;
  t = performance.now(); predictRows(model, test); const tp = performance.now() - t;
  console.log({ encode: te, raw: tr, forest: tf, outputs: to, predictRows: tp });
}
