import { claimAttemptSlots, claimSlot, releaseSlot } from '../../services/webhooks/attempt-slots';
import { startHarness, type Harness } from '../support/harness';
import { WebhookReceiver } from '../support/webhook-receiver';

interface Delivery {
  id: string;
  state: string;
  attempts: Array<{ number: number; status: number | null; outcome: string }>;
}

/**
 * An account's webhook attempts in flight, and an endpoint's within them, are bounded across workers
 * (WEBHOOK_ATTEMPTS_PER_ACCOUNT, WEBHOOK_ATTEMPTS_PER_ENDPOINT), so that receivers that never answer
 * hold neither every attempt slot of the workers (a twenty-third probe: another account's delivery
 * waited out their timeout) nor every slot of their account (a twenty-sixth probe: a healthy endpoint
 * waited a minute behind a hanging one). Real PostgreSQL, Temporal and receiver; here a worker runs 4
 * attempts at once, an account 3 and an endpoint 2.
 */
describe('webhook attempts in flight, bounded per account and per endpoint', () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    h = await startHarness({
      config: {
        WEBHOOKS_ALLOW_LOOPBACK_HTTP: true,
        WEBHOOK_RETRY_DELAYS: '0s,300ms',
        WEBHOOK_TIMEOUT_SECONDS: 6,
        WEBHOOK_RELAY_EVERY_MS: 100,
        WEBHOOK_ATTEMPTS_PER_WORKER: 4,
        WEBHOOK_ATTEMPTS_PER_ACCOUNT: 3,
        WEBHOOK_ATTEMPTS_PER_ENDPOINT: 2,
      },
    });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await h?.stop();
  });

  async function endpoint(adminKey: string, path: string): Promise<string> {
    const res = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url(path) });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  async function settled(adminKey: string, webhookId: string, timeoutMs = 60_000): Promise<Delivery> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await h.http.get(`/v1/webhooks/${webhookId}/deliveries`).set('X-API-Key', adminKey);
      const [delivery] = res.body.data as Delivery[];
      if (delivery && delivery.state !== 'pending') return delivery;
      if (Date.now() > deadline) throw new Error(`delivery of ${webhookId} not settled: ${JSON.stringify(delivery)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Waits until the receiver has had `count` requests on any of `paths`. */
  async function requestsOn(paths: string[], count: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (paths.flatMap((p) => receiver.at(p)).length < count) {
      if (Date.now() > deadline) throw new Error(`${paths.join(', ')}: fewer than ${count} requests`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Each delivery's workflow asked for a slot more often than it made attempts (it was refused). */
  async function refusedAtLeastOnce(deliveryIds: string[]): Promise<number> {
    const asked = await Promise.all(
      deliveryIds.map(async (id) => (((await h.client.workflow.getHandle(`delivery/${id}`).fetchHistory()).events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).length)),
    );
    return asked.filter((n) => n > 2).length;
  }

  it("keeps an account whose receivers hang to 3 attempts at once, so another account's delivery is sent while they hang, and records no attempt for a refused slot", async () => {
    const hanging = await h.provision('build');
    const paths = ['/hang-1', '/hang-2', '/hang-3', '/hang-4'];
    const hooks: string[] = [];
    for (const path of paths) {
      // the first attempt hangs until the 6 s timeout, the second is answered
      receiver.script(path, [{ status: 200, hang: true }, { status: 204 }]);
      hooks.push(await endpoint(hanging.adminKey, path));
    }
    for (const hook of hooks) expect((await h.http.post(`/v1/webhooks/${hook}/test`).set('X-API-Key', hanging.adminKey)).status).toBe(202);
    await requestsOn(paths, 3);

    // Four attempts would fill the worker's four slots; the bound leaves one of them free.
    const other = await h.provision('build');
    const otherHook = await endpoint(other.adminKey, '/prompt');
    expect((await h.http.post(`/v1/webhooks/${otherHook}/test`).set('X-API-Key', other.adminKey)).status).toBe(202);
    const [sent] = await receiver.waitFor('/prompt', 1);
    const firstHung = paths.flatMap((p) => receiver.at(p)).slice(0, 3);
    for (const hung of firstHung) expect(hung.closedAt ?? Number.POSITIVE_INFINITY).toBeGreaterThan(sent!.at);
    expect((await settled(other.adminKey, otherHook)).state).toBe('succeeded');

    const delivered = await Promise.all(hooks.map((hook) => settled(hanging.adminKey, hook)));
    expect(receiver.maxOpen(paths)).toBe(3);
    for (const delivery of delivered) {
      expect(delivery.attempts.map((a) => [a.number, a.status, a.outcome])).toEqual([
        [1, null, 'retry'],
        [2, 204, 'succeeded'],
      ]);
    }
    expect(await refusedAtLeastOnce(delivered.map((d) => d.id))).toBeGreaterThanOrEqual(1);
    const [live] = await h.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ n: string }>>(`select count(*) as n from webhook_attempt_slots where account_id = ? and expires_at > now()`, [hanging.account.id]);
    expect(Number(live!.n)).toBe(0);
  }, 120_000);

  it("keeps a hanging endpoint to 2 attempts at once, so its account's healthy endpoint is sent to while they hang (a twenty-sixth probe: it waited 63 s behind them)", async () => {
    const account = await h.provision('build');
    receiver.script('/stuck', [{ status: 200, hang: true }]);
    const stuck = await endpoint(account.adminKey, '/stuck');
    const healthy = await endpoint(account.adminKey, '/healthy');
    for (let i = 0; i < 4; i += 1) expect((await h.http.post(`/v1/webhooks/${stuck}/test`).set('X-API-Key', account.adminKey)).status).toBe(202);
    await requestsOn(['/stuck'], 2);
    expect((await h.http.post(`/v1/webhooks/${healthy}/test`).set('X-API-Key', account.adminKey)).status).toBe(202);
    const [sent] = await receiver.waitFor('/healthy', 1);
    for (const hung of receiver.at('/stuck').slice(0, 2)) expect(hung.closedAt ?? Number.POSITIVE_INFINITY).toBeGreaterThan(sent!.at);
    expect(receiver.maxOpen(['/stuck'])).toBe(2);
    // the stuck endpoint's deliveries go on being attempted, two at a time, without being lost
    expect((await settled(account.adminKey, healthy)).state).toBe('succeeded');
    await h.http.patch(`/v1/webhooks/${stuck}`).set('X-API-Key', account.adminKey).send({ active: false });
  }, 120_000);

  it('gives 20 attempts claiming at once exactly the 5 slots of their scope, distinct, frees a slot on release or when its lease ends, and takes no account slot for an endpoint whose own are taken', async () => {
    const { account } = await h.provision('build');
    const scope = `endpoint:whk_race${Date.now()}`;
    const claim = (deliveryId: string) => claimSlot(h.orm.em.fork(), scope, account.id, deliveryId, 5, 60_000);
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => claim(`dlv_race${i}`)));
    const held = claims.filter((c) => c !== null);
    expect(held).toHaveLength(5);
    expect(new Set(held.map((c) => c.slot))).toEqual(new Set([0, 1, 2, 3, 4]));

    expect(await claim('dlv_late')).toBeNull();
    // an attempt retried after its worker was lost takes back its delivery's slot
    expect(await claim(held[0]!.deliveryId)).toEqual(held[0]);

    await releaseSlot(h.orm.em.fork(), held[1]!);
    expect(await claim('dlv_after_release')).toEqual(expect.objectContaining({ slot: held[1]!.slot }));

    // a lease of a worker that died runs out and its slot is taken, not waited for
    await h.orm.em.fork().getConnection().execute(`update webhook_attempt_slots set expires_at = now() - interval '1 second' where scope = ? and slot = ?`, [scope, held[2]!.slot]);
    expect(await claim('dlv_after_expiry')).toEqual(expect.objectContaining({ slot: held[2]!.slot }));
    // the dead attempt's late release frees nothing it no longer holds
    await releaseSlot(h.orm.em.fork(), held[2]!);
    expect(await claim('dlv_late')).toBeNull();

    // the endpoint's slots all taken: the attempt waits, holding none of its account's
    const bounds = { perAccount: 3, perEndpoint: 5 };
    const endpointId = scope.slice('endpoint:'.length);
    expect(await claimAttemptSlots(h.orm.em.fork(), { accountId: account.id, endpointId }, 'dlv_waiting', bounds, 60_000)).toBeNull();
    const [accountHeld] = await h.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ n: string }>>(`select count(*) as n from webhook_attempt_slots where scope = ?`, [`account:${account.id}`]);
    expect(Number(accountHeld!.n)).toBe(0);
  });
});
