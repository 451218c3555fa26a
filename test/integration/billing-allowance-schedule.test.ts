import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTestServer } from '../../scripts/lib/temporal-dev-server';
import { scheduleIds } from '../../services/temporal/ids';
import { ensureSchedules } from '../../services/temporal/schedules';
import { installRuntimeOnce } from '../../services/temporal/worker';
import { accountOf, ledgerOf } from '../support/billing';
import { TEST_ENV, requireEnv, toolsDir } from '../support/env';
import { startHarness, type Harness } from '../support/harness';

const HOUR_MS = 3_600_000;
const month = (ms: number, plus = 0): string => {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + plus, 1)).toISOString().slice(0, 7);
};
/** Milliseconds from `ms` to one hour into the next calendar month (UTC). */
const intoNextMonth = (ms: number): number => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) + HOUR_MS - ms;
};

/**
 * The monthly allowance opens once per period: what the `reset-allowances` Schedule runs on the 1st,
 * on the time-skipping test server (months pass in seconds), and the Schedule itself on the dev server.
 */
describe('monthly allowance reset', () => {
  let env: TestWorkflowEnvironment;
  let h: Harness;

  beforeAll(async () => {
    installRuntimeOnce();
    env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: findTestServer(toolsDir) } } });
    h = await startHarness({ temporal: { client: env.client, nativeConnection: env.nativeConnection } });
  });
  afterAll(async () => {
    await h?.stop();
    await env?.teardown();
  });

  // A plain client: awaiting the result through the environment's own client would let the server
  // skip time while the run is open; months pass only through env.sleep here.
  const run = (accountIds: string[], n: string) =>
    new Client({ connection: env.connection }).workflow.execute('resetAllowancesWorkflow', { taskQueue: h.taskQueue, workflowId: `reset-allowances-test-${n}-${accountIds[0]!}`, args: [{ accountIds }] });

  it('resets each account once per period, with one ledger row, whatever the number of runs; the lazy reset does not add another', async () => {
    const account = await h.provision('build');
    const id = account.account.id;
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 5 where id = ?`, [id]);
    const start = await env.currentTimeMs();

    await env.sleep(intoNextMonth(start));
    const first = (await run([id], 'a')) as { period: string; reset: number };
    expect(first).toEqual({ period: month(start, 1), reset: 1 });
    expect(await run([id], 'b')).toEqual({ period: month(start, 1), reset: 0 });
    // A charge or a read in between (the lazy path, on the real clock) opens nothing more.
    expect((await h.http.get('/v1/billing/subscription').set('X-API-Key', account.adminKey)).body.allowance_period).toBe(month(start, 1));
    expect(await accountOf(h, id)).toEqual(expect.objectContaining({ allowancePeriod: month(start, 1), allowanceRemaining: 20_000 }));

    await env.sleep(intoNextMonth(await env.currentTimeMs()));
    await env.sleep(HOUR_MS);
    expect(await run([id], 'c')).toEqual({ period: month(start, 2), reset: 1 });
    await h.orm.em.fork().getConnection().execute(`update accounts set allowance_remaining = 7 where id = ?`, [id]);
    expect(await run([id], 'd')).toEqual({ period: month(start, 2), reset: 0 });
    expect((await accountOf(h, id)).allowanceRemaining).toBe(7);

    const resets = (await ledgerOf(h, id, ['allowance_reset'])).map((r) => [r.reference, r.allowanceDelta]);
    expect(resets).toEqual([
      [month(Date.now()), 20_000],
      [month(start, 1), 20_000 - 5],
      [month(start, 2), 0],
    ]);
  });

  it('the Schedule is created at worker start-up for the 1st of each month (UTC), idempotently', async () => {
    const connection = await Connection.connect({ address: requireEnv(TEST_ENV.temporalAddress) });
    const client = new Client({ connection });
    try {
      await ensureSchedules(client, 'queue-of-another-deployment', { keySweepEvery: '1h' });
      await ensureSchedules(client, h.taskQueue, { keySweepEvery: '1h' });
      await ensureSchedules(client, h.taskQueue, { keySweepEvery: '1h' });
      const described = await client.schedule.getHandle(scheduleIds.resetAllowances).describe();
      expect(described.action).toEqual(expect.objectContaining({ workflowType: 'resetAllowancesWorkflow', taskQueue: h.taskQueue }));
      expect(described.spec.calendars).toEqual([expect.objectContaining({ dayOfMonth: [{ start: 1, end: 1, step: 1 }], hour: [{ start: 0, end: 0, step: 1 }] })]);
      expect(described.spec.timezone).toBe('UTC');
      const next = described.info.nextActionTimes[0]!;
      expect(next.getUTCDate()).toBe(1);
      expect(next.getUTCHours()).toBe(0);
    } finally {
      for (const id of [scheduleIds.resetAllowances, scheduleIds.sweepEndedKeys]) {
        await client.schedule
          .getHandle(id)
          .delete()
          .catch((err: unknown) => {
            if (!(err instanceof ScheduleNotFoundError)) throw err;
          });
      }
      await connection.close();
    }
  });
});
