import { EnginePool, INLINE_MAX_ROWS } from '../../../services/engine-pool';
import { serialiseModel, trainTabular } from '../../../engines/tabular';
import { churnRows, withoutTarget } from '../../support/datasets';

describe('engine pool: small batches scored on the main thread', () => {
  const pool = new EnginePool(1, 1);
  afterAll(() => pool.close());

  it('adopts a version a thread has loaded and scores small batches inline with the very same answers', async () => {
    const { model } = trainTabular(churnRows(120, 3), { target: 'churned', seed: 1 });
    const artefact = serialiseModel(model);
    let artefactReads = 0;
    const load = async () => {
      artefactReads += 1;
      return artefact;
    };
    const rows = withoutTarget(churnRows(INLINE_MAX_ROWS, 9), 'churned');
    const fromThread = await pool.predict('ver_inline', load, rows);
    expect(pool.scoresInline('ver_inline')).toBe(false);
    // The copy to the main thread happens in the background after the first small call.
    for (let i = 0; i < 100 && !pool.scoresInline('ver_inline'); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(pool.scoresInline('ver_inline')).toBe(true);
    const inline = await pool.predict('ver_inline', load, rows);
    expect(inline).toEqual(fromThread);
    // The thread had it loaded: the artefact was read once, for the thread, never for the copy.
    expect(artefactReads).toBe(1);
  });

  it('leaves batches above the inline size to the threads and never copies a model for them', async () => {
    const { model } = trainTabular(churnRows(120, 4), { target: 'churned', seed: 2 });
    const artefact = serialiseModel(model);
    const rows = withoutTarget(churnRows(INLINE_MAX_ROWS + 1, 5), 'churned');
    const answers = await pool.predict('ver_large', async () => artefact, rows);
    expect(answers).toHaveLength(INLINE_MAX_ROWS + 1);
    // As long as a small call's copy may take (the test above), and still no copy.
    for (let i = 0; i < 100; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(pool.scoresInline('ver_large')).toBe(false);
    }
  });
});
