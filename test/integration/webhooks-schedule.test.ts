import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTestServer } from '../../scripts/lib/temporal-dev-server';
import { installRuntimeOnce } from '../../services/temporal/worker';
import { toolsDir } from '../support/env';
import { startHarness, type Harness } from '../support/harness';
import { WebhookReceiver, verify } from '../support/webhook-receiver';

interface Attempt {
  number: number;
  scheduled_at: string;
  status: number | null;
  outcome: string;
}

/**
 * The real retry schedule (immediately, 5 s, 5 min, 30 min, 2 h, … with ±10 % jitter) on Temporal's
 * time-skipping test server: the hours pass in seconds and the attempts land where the schedule says.
 */
describe('webhook retry schedule (time-skipping Temporal)', () => {
  let env: TestWorkflowEnvironment;
  let h: Harness;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    installRuntimeOnce();
    env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: findTestServer(toolsDir) } } });
    h = await startHarness({
      temporal: { client: env.client, nativeConnection: env.nativeConnection },
      config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true, WEBHOOK_RELAY_EVERY_MS: 100 },
    });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await h?.stop();
    await env?.teardown();
  });

  /**
   * The delivery's attempts once it has `count`. With `skip`, the test server's clock moves on by that
   * much first, and again every 5 s of waiting: an attempt is in the database a moment before its
   * workflow starts the timer of the next one, and a clock moved on before that timer exists never
   * fires it (a loaded run saw 2 of 3 attempts). Timers fire at their own times however far the
   * clock moves, so the gaps checked below stay exact.
   */
  async function attemptsOf(adminKey: string, webhookId: string, count: number, skip?: Parameters<TestWorkflowEnvironment['sleep']>[0]): Promise<Attempt[]> {
    const deadline = Date.now() + 30_000;
    let skippedAt = 0;
    for (;;) {
      if (skip !== undefined && Date.now() - skippedAt >= 5_000) {
        await env.sleep(skip);
        skippedAt = Date.now();
      }
      const [delivery] = (await h.http.get(`/v1/webhooks/${webhookId}/deliveries`).set('X-API-Key', adminKey)).body.data as Array<{ attempts: Attempt[] }>;
      if (delivery && delivery.attempts.length >= count) return delivery.attempts;
      if (Date.now() > deadline) throw new Error(`only ${delivery?.attempts.length ?? 0} of ${count} attempts`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('retries a failing receiver at 5 s, 5 min and 30 min (with jitter) and stops at its first 2xx', async () => {
    const { adminKey } = await h.provision('build');
    receiver.script('/flaky', [{ status: 500 }, { status: 503 }, { status: 502 }, { status: 200 }]);
    const hook = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/flaky') });
    await h.http.post(`/v1/webhooks/${hook.body.id}/test`).set('X-API-Key', adminKey);

    await attemptsOf(adminKey, hook.body.id, 1);
    await attemptsOf(adminKey, hook.body.id, 2, '6s');
    await attemptsOf(adminKey, hook.body.id, 3, '6m');
    const attempts = await attemptsOf(adminKey, hook.body.id, 4, '34m');

    expect(attempts.map((a) => [a.status, a.outcome])).toEqual([
      [500, 'retry'],
      [503, 'retry'],
      [502, 'retry'],
      [200, 'succeeded'],
    ]);
    const at = attempts.map((a) => Date.parse(a.scheduled_at));
    const gaps = [at[1]! - at[0]!, at[2]! - at[1]!, at[3]! - at[2]!];
    for (const [gap, planned] of gaps.map((g, i) => [g, [5_000, 300_000, 1_800_000][i]!] as const)) {
      expect(gap).toBeGreaterThanOrEqual(planned * 0.9 - 1000);
      expect(gap).toBeLessThanOrEqual(planned * 1.1 + 1000);
    }
    for (const request of receiver.at('/flaky')) verify(hook.body.secret, request);
    // Nothing more is sent once it succeeded, however long we wait.
    await env.sleep('1d');
    expect(receiver.at('/flaky')).toHaveLength(4);
  });
});
