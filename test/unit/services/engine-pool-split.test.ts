import { EnginePool, SPLIT_MIN_ROWS } from '../../../services/engine-pool';
import { predictRows, serialiseModel, trainTabular } from '../../../engines/tabular';
import { churnRows, withoutTarget } from '../../support/datasets';

describe('engine pool: large batches spread over the threads', () => {
  const pool = new EnginePool(2, 2);
  afterAll(() => pool.close());

  it('answers a batch large enough to be cut into parts exactly as one in-process scoring, reading the artefact once for all parts', async () => {
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
    // No thread held the version on this first call: every part missed, and they shared one read.
    expect(artefactReads).toBe(1);
    // Again, now with both threads holding the version: same answers, no read.
    expect(await pool.predict('ver_split', load, rows)).toEqual(pooled);
    expect(artefactReads).toBe(1);
  });
});
