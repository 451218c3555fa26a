import { churnRows } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';

/**
 * Fits run on a task queue of their own, taken by the worker only as far as its engine threads go:
 * the others wait in Temporal, not in one of the worker's activity slots with their context loaded.
 */
describe('fits queue in Temporal, as many at once as the engine has threads, account by account', () => {
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

  it('dispatches waiting fits account by account: another account’s fit, queued behind 3 waiting fits of one account, starts before them all', async () => {
    const busy = await h.provision('build');
    const other = await h.provision('build');
    const create = (apiKey: string, seed: number) =>
      h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(3000, seed) }).then((res) => res);
    const fitsOf = async (workspaceId: string) => {
      const models = await h.orm.em.fork().getConnection().execute<Array<{ id: string }>>(`select id from models where workspace_id = ? and status = 'training'`, [workspaceId]);
      return Promise.all(
        models.map(async (m) => (await h.client.workflow.getHandle(`train/${m.id}`).describe().catch(() => null))?.raw.pendingActivities?.find((a) => a.activityType?.name === 'fitVersion')),
      );
    };
    const busyCreations = [11, 12, 13, 14, 15].map((seed) => create(busy.apiKey, seed));
    // the busy account's 5 fits: 2 started, 3 waiting
    const deadline = Date.now() + 60_000;
    for (;;) {
      const fits = await fitsOf(busy.workspace.id);
      if (fits.filter((a) => a?.lastStartedTime).length === 2 && fits.filter((a) => a && !a.lastStartedTime).length === 3) break;
      if (Date.now() > deadline) throw new Error('the busy account never had 2 fits started and 3 waiting');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const otherCreation = create(other.apiKey, 16);
    let busyWaitingWhenOtherStarted: number | null = null;
    while (busyWaitingWhenOtherStarted === null) {
      const [mine] = await fitsOf(other.workspace.id);
      if (mine?.lastStartedTime) busyWaitingWhenOtherStarted = (await fitsOf(busy.workspace.id)).filter((a) => a && !a.lastStartedTime).length;
      else if (Date.now() > deadline + 60_000) throw new Error('the other account’s fit never started');
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const answers = await Promise.all([...busyCreations, otherCreation]);
    expect(answers.map((res) => res.status)).toEqual([201, 201, 201, 201, 201, 201]);
    // first come, first served would have started all 3 first
    expect(busyWaitingWhenOtherStarted).toBeGreaterThanOrEqual(1);
  });
});
