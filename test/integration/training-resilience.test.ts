import type { ChildProcess } from 'node:child_process';
import { ModelSchema, ModelVersionSchema } from '../../db/entities';
import { churnRows } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';
import { killProcessGroup, spawnServiceProcess, startInProcessWorker } from '../support/processes';

/** A worker killed in the middle of a fit: Temporal retries the fit elsewhere and the model ends trained, once. */
describe('training survives a worker killed mid-fit', () => {
  let h: Harness;
  let child: ChildProcess | null = null;
  beforeAll(async () => {
    h = await startHarness({ withoutWorker: true, fitHeartbeatTimeoutMs: 3000 });
  });
  afterAll(async () => {
    killProcessGroup(child);
    await h.stop();
  });

  it('retries the fit after the heartbeat timeout and stores exactly one version', async () => {
    child = spawnServiceProcess('worker', h.taskQueue, { LOG_LEVEL: 'warn', ENGINE_THREADS: '1' });

    const { apiKey } = await h.provision('build');
    const training = h.http.post('/v1/models').set('X-API-Key', apiKey).send({ target: 'churned', engine: 'tabular-gbdt', explain: true, data: churnRows(2500) });
    const response = training.then((res) => res);

    // Wait until the child worker has started the fit, then kill it without warning.
    const deadline = Date.now() + 90_000;
    let modelId: string | null = null;
    let started = false;
    while (!started && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const model = await h.orm.em.fork().findOne(ModelSchema, { status: 'training' }, { orderBy: { createdAt: 'desc' } });
      if (!model) continue;
      modelId = model.id;
      const description = await h.client.workflow.getHandle(`train/${model.id}`).describe().catch(() => null);
      started = description?.raw.pendingActivities?.some((a) => a.activityType?.name === 'fitVersion' && Number(a.attempt) === 1 && a.lastStartedTime) ?? false;
    }
    expect(started).toBe(true);
    process.kill(-child.pid!, 'SIGKILL');

    // A healthy worker takes over on the same task queue.
    const worker = await startInProcessWorker(h);
    try {
      const res = await response;
      expect(res.status).toBe(201);
      expect(res.body.id).toBe(modelId);
      expect(res.body.status).toBe('serving');
      expect(await h.orm.em.fork().count(ModelVersionSchema, { model: modelId! })).toBe(1);
      const history = await h.client.workflow.getHandle(`train/${modelId}`).fetchHistory();
      const attempts = (history.events ?? [])
        .filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => Number(e.activityTaskStartedEventAttributes?.attempt));
      expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
    } finally {
      await worker.stop();
    }
  });
});
