/**
 * The contract: a platform upgrade never changes an existing model's predictions. The fixtures are
 * artefacts written by engine tabular-gbdt 1.0.0, 4.0.0 and 5.0.0 (format 1), 6.0.0 (format 2, with a
 * linear part, never the default), 7.0.0 (format 2), 8.0.0, 9.0.0 and 10.0.0 (format 3, with a forest part
 * where the mixture gave it weight), 11.0.0, 12.0.0 and 13.0.0 (format 4, each with a group part; 12.0.0's
 * regression fixture with its fold models stopped together; 13.0.0's group parts found by its centred key
 * search; 14.0.0's multiclass fixture, above small data, with its leaf L2 of 1/4; 15.0.0's and 16.0.0's, 14.0.0's models on small
 * data; 17.0.0's (format 5), its binary fixture with a kNN part; 18.0.0's (format 5), its regression fixture above
 * small data, boosted at its learning rate of 0.15; 19.0.0's (format 5), its multiclass fixture above small data, its
 * symmetric rounds grown with an L2 of 3/4), each the default in its time but 6.0.0,
 * and the predictions it served for them (fixtures/generate.ts); this build must load them and serve
 * exactly those numbers.
 */
import * as fs from 'fs';
import * as path from 'path';
import { loadModel, predictRows, serialiseModel, type Prediction } from '../../../engines/tabular/index';
import { fixtureQueryRows, fixtureTrainingRows } from './fixtures/query';

const dir = path.join(__dirname, 'fixtures');
const kinds = ['binary', 'multiclass', 'regression'] as const;

/** Every number of a prediction list, in order, so they can be compared bit for bit (Object.is). */
function numbers(preds: Prediction[]): Array<number | string | boolean> {
  const out: Array<number | string | boolean> = [];
  for (const p of preds) {
    out.push(p.prediction);
    for (const [k, v] of Object.entries(p.probabilities ?? {})) out.push(k, v);
  }
  return out;
}

function expectBitIdentical(actual: Prediction[], expected: Prediction[]): void {
  const a = numbers(actual);
  const e = numbers(expected);
  expect(a.length).toBe(e.length);
  const differing = a.map((_, i) => i).filter((i) => !Object.is(a[i], e[i]));
  expect(differing).toEqual([]);
}

const cases = (['1.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0', '8.0.0', '9.0.0', '10.0.0', '11.0.0', '12.0.0', '13.0.0', '14.0.0', '15.0.0', '16.0.0', '17.0.0', '18.0.0', '19.0.0'] as const).flatMap((version) => kinds.map((kind) => [kind, version] as const));

describe.each(cases)('a %s model trained by tabular-gbdt %s', (kind, version) => {
  const prefix = `v${version.split('.')[0]}`;
  const text = fs.readFileSync(path.join(dir, `${prefix}-${kind}.artefact.json`), 'utf8');
  const served = JSON.parse(fs.readFileSync(path.join(dir, `${prefix}-${kind}.predictions.json`), 'utf8')) as Prediction[];
  const query = fixtureQueryRows(fixtureTrainingRows(version, kind));

  it('loads as its engine version and serves the predictions it served before, bit for bit', () => {
    const model = loadModel(text);
    expect(model.engine).toEqual({ id: 'tabular-gbdt', version });
    expect(served.length).toBe(query.length);
    expectBitIdentical(predictRows(model, query), served);
  });

  it('serves the same numbers through the large-batch path', () => {
    const model = loadModel(text);
    const tiled: typeof query = [];
    for (let r = 0; r < 40; r++) tiled.push(...query);
    const preds = predictRows(model, tiled);
    expectBitIdentical(preds.slice(preds.length - query.length), served);
  });

  it('re-serialises to the same artefact', () => {
    expect(serialiseModel(loadModel(text))).toBe(text);
  });
});
