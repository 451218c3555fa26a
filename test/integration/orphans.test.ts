import { ModelSchema, ModelVersionSchema, OutcomeSchema } from '../../db/entities';
import { createModelForTraining } from '../../services/models';
import { churnRows } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';
import type { SweepResult } from '../../workflows/sweep-ended-keys';

/** No orphan after a crash: what the creating call or a racing change left behind is finished or given up durably. */
describe('no orphan models after a crash or a race', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  const sweep = () =>
    h.client.workflow.execute<() => Promise<SweepResult>>('sweepEndedKeysWorkflow', { taskQueue: h.taskQueue, workflowId: `test-sweep-${Date.now()}-${Math.random()}` });

  async function strandedModel(rows: Array<Record<string, unknown>>, target = 'churned') {
    const account = await h.provision('free');
    // The call committed the model and its context, then died before starting `train/<mdl>`.
    const model = await createModelForTraining(h.orm.em.fork(), {
      workspaceId: account.workspace.id,
      accountId: account.account.id,
      name: undefined,
      target,
      task: 'binary',
      engineId: 'tabular-gbdt',
      explain: false,
      autoUpdate: false,
      rows,
    });
    await h.orm.em.fork().nativeUpdate(ModelSchema, { id: model.id }, { createdAt: new Date(Date.now() - 600_000) });
    return { account, modelId: model.id };
  }

  const waitFor = async (check: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (await check()) return true;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return false;
  };

  it('trains a model whose creating call died before starting its workflow, once, when the sweep runs', async () => {
    const { modelId } = await strandedModel(churnRows(120));
    const result = await sweep();
    expect(result.trainingsResumed).toBeGreaterThanOrEqual(1);
    expect(await waitFor(async () => (await h.orm.em.fork().findOneOrFail(ModelSchema, { id: modelId })).status === 'serving')).toBe(true);
    await sweep();
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
  });

  it('gives up a stranded model whose data the engine refuses, freeing the quota slot (free plan: one model)', async () => {
    const constant = churnRows(120).map((r) => ({ ...r, churned: 'yes' }));
    const { modelId, account } = await strandedModel(constant);
    await sweep();
    expect(await waitFor(async () => (await h.orm.em.fork().findOneOrFail(ModelSchema, { id: modelId })).status === 'deleted')).toBe(true);
    const next = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(120) });
    expect(next.status).toBe(201);
  });

  it('stores no version for a model deleted while its refresh ran', async () => {
    const account = await h.provision('build');
    const created = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(3000) });
    const modelId = created.body.id as string;
    const features = { x1: 10, x2: 1, colour: 'red' };
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: [{ actual: 'yes', features }] });
    const refreshing = h.http.post(`/v1/models/${modelId}/refresh`).set('X-API-Key', account.apiKey).then((r) => r);
    expect(await waitFor(async () => (await h.orm.em.fork().count(OutcomeSchema, { modelId, status: 'folded' })) === 1)).toBe(true);
    expect((await h.http.delete(`/v1/models/${modelId}`).set('X-API-Key', account.apiKey)).status).toBe(204);
    const refreshed = await refreshing;
    expect(refreshed.status).toBeGreaterThanOrEqual(400);
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
    const versions = await h.orm.em.fork().find(ModelVersionSchema, { model: modelId }, { populate: ['artefact'] });
    expect(versions.every((v) => v.artefact === null)).toBe(true);
  });

  it('makes no version when a refresh finds nothing to fold (its outcomes were taken by a racing refresh)', async () => {
    const account = await h.provision('build');
    const created = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(150) });
    const modelId = created.body.id as string;
    const result = await h.client.workflow.execute('refreshModel', { taskQueue: h.taskQueue, workflowId: `refresh/${modelId}`, args: [{ modelId, heartbeatTimeoutMs: 30_000 }] });
    expect(result).toBeNull();
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
  });

  it('does not refresh an archived model from a running integration', async () => {
    const account = await h.provision('build');
    const created = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(150) });
    const modelId = created.body.id as string;
    await h.http.post(`/v1/models/${modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: [{ actual: 'no', features: { x1: 5, x2: 2, colour: 'blue' } }] });
    expect((await h.http.post(`/v1/models/${modelId}/archive`).set('X-API-Key', account.apiKey)).status).toBe(204);
    const result = await h.client.workflow.execute('refreshModel', { taskQueue: h.taskQueue, workflowId: `refresh/${modelId}`, args: [{ modelId, heartbeatTimeoutMs: 30_000 }] });
    expect(result).toBeNull();
    expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId })).toBe(1);
    expect(await h.orm.em.fork().count(OutcomeSchema, { modelId, status: 'pending' })).toBe(1);
  });
});
