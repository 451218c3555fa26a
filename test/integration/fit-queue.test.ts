import { churnRows } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';

/**
 * Fits run on a task queue of their own, taken by the worker only as far as its engine threads go:
 * the others wait in Temporal, not in one of the worker's activity slots with their context loaded.
 */
describe('fits queue in Temporal, as many at once as the engine has threads', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('starts at most the engine pool’s 2 fits of 4 models created at once, the others waiting unstarted, and trains all 4', async () => {
    expect(h.enginePool.threads).toBe(2);
    const { apiKey, workspace } = await h.provision('build');
    const creations = [1, 2, 3, 4].map((seed) => h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(3000, seed) }).then((res) => res));
    let mostStarted = 0;
    let sawWaiting = false;
    let settled = false;
    const done = Promise.all(creations).finally(() => (settled = true));
    while (!settled) {
      const training = await h.orm.em
        .fork()
        .getConnection()
        .execute<Array<{ id: string }>>(`select id from models where workspace_id = ? and status = 'training'`, [workspace.id]);
      const fits = await Promise.all(
        training.map(async (m) => (await h.client.workflow.getHandle(`train/${m.id}`).describe().catch(() => null))?.raw.pendingActivities?.find((a) => a.activityType?.name === 'fitVersion')),
      );
      const started = fits.filter((a) => a?.lastStartedTime).length;
      mostStarted = Math.max(mostStarted, started);
      if (started === 2 && fits.some((a) => a && !a.lastStartedTime)) sawWaiting = true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const answers = await done;
    expect(answers.map((res) => [res.status, res.body.status])).toEqual(Array.from({ length: 4 }, () => [201, 'serving']));
    expect(mostStarted).toBe(2);
    expect(sawWaiting).toBe(true);
  });
});
