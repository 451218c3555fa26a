import { EnginePool, SPLIT_MIN_ROWS } from '../../../services/engine-pool';
import { predictRows, serialiseModel, trainTabular } from '../../../engines/tabular';
import { churnRows, withoutTarget } from '../../support/datasets';

describe('engine pool: large batches spread over the threads', () => {
  const pool = new EnginePool(2, 2);
  afterAll(() => pool.close());

  it('answers a batch large enough to be cut into parts exactly as one in-process scoring, reading the artefact at most once per call', async () => {
    const { model } = trainTabular(churnRows(200, 3), { target: 'churned', seed: 1 });
    const artefact = serialiseModel(model);
    let artefactReads = 0;
    const load = async () => {
      artefactReads += 1;
      return artefact;
    };
    const rows = withoutTarget(churnRows(SPLIT_MIN_ROWS * 4 + 3, 7), 'churned');
    const pooled = await pool.predict('ver_split', load, rows);
    expect(pooled).toEqual(predictRows(model, rows));
    // No thread held the version on this first call: every part that missed shared one read.
    expect(artefactReads).toBe(1);
    // Later calls: the same answers, and at most one more read each (a thread that had not served yet).
    for (let call = 0; call < 3; call += 1) {
      const before = artefactReads;
      expect(await pool.predict('ver_split', load, rows)).toEqual(pooled);
      expect(artefactReads - before).toBeLessThanOrEqual(1);
    }
  });
});
