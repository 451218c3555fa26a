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

  it('is created or updated idempotently, marks keys past expires_at as revoked (reason expired) and prunes the log', async () => {
    const { adminKey, account, workspace } = await h.provision();
    const knex = h.orm.em.fork().getKnex();
    const entry = (id: string, daysAgo: number) => ({
      id,
      workspace_id: workspace.id,
      account_id: account.id,
      method: 'GET',
      path: '/v1/models',
      operation: 'models.list',
      status: 200,
      credits: 0,
      duration_ms: 1,
      created_at: new Date(Date.now() - daysAgo * 86_400_000),
    });
    await knex('request_log').insert([entry('req_old_entry_31_days', 31), entry('req_recent_entry_29_days', 29)]);
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

    // The sweep revokes keys and prunes the log in one activity, one step after the other: wait for both.
    const deadline = Date.now() + 20_000;
    const read = async () => ({
      row: await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: created.body.id }),
      kept: (await knex('request_log').whereIn('id', ['req_old_entry_31_days', 'req_recent_entry_29_days']).select('id')) as Array<{ id: string }>,
    });
    let { row, kept } = await read();
    while ((!row.revokedAt || kept.length > 1) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      ({ row, kept } = await read());
    }
    expect(row.revokeReason).toBe('expired');
    expect(kept.map((r) => r.id)).toEqual(['req_recent_entry_29_days']);
    expect(row.revokedAt!.getTime()).toBeGreaterThanOrEqual(row.expiresAt!.getTime());
  });
});
