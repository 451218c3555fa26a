import { ScheduleNotFoundError } from '@temporalio/client';
import { ApiKeySchema } from '../../db/entities';
import { scheduleIds } from '../../services/temporal/ids';
import { ensureSchedules } from '../../services/temporal/schedules';
import { startHarness, type Harness } from '../support/harness';

/** Keys past expires_at stop at once (auth checks the date); a Temporal Schedule marks them revoked. */
describe('expired-key sweep Schedule', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    try {
      await h.client.schedule.getHandle(scheduleIds.sweepEndedKeys).delete();
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    }
    await h.stop();
  });

  it('is created or updated idempotently and marks keys past expires_at as revoked (reason expired)', async () => {
    const { adminKey } = await h.provision();
    const created = await h.http
      .post('/v1/api-keys')
      .set('X-API-Key', adminKey)
      .send({ name: 'expiring', expires_at: new Date(Date.now() + 1000).toISOString() });
    expect(created.status).toBe(201);

    // A schedule left by another deployment (other queue, other interval) is brought to this spec.
    await ensureSchedules(h.client, 'a-queue-nobody-polls', { keySweepEvery: '1h' });
    await ensureSchedules(h.client, h.taskQueue, { keySweepEvery: '1s' });
    await ensureSchedules(h.client, h.taskQueue, { keySweepEvery: '1s' }); // a second worker start changes nothing
    const description = await h.client.schedule.getHandle(scheduleIds.sweepEndedKeys).describe();
    expect(description.action).toEqual(expect.objectContaining({ workflowType: 'sweepEndedKeysWorkflow', taskQueue: h.taskQueue }));
    expect(description.policies.overlap).toBe('TERMINATE_OTHER');

    const deadline = Date.now() + 20_000;
    let row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: created.body.id });
    while (!row.revokedAt && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: created.body.id });
    }
    expect(row.revokeReason).toBe('expired');
    expect(row.revokedAt!.getTime()).toBeGreaterThanOrEqual(row.expiresAt!.getTime());
  });
});
