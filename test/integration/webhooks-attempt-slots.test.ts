import { claimAttemptSlot, releaseAttemptSlot } from '../../services/webhooks/attempt-slots';
import { startHarness, type Harness } from '../support/harness';
import { WebhookReceiver } from '../support/webhook-receiver';

interface Delivery {
  id: string;
  state: string;
  attempts: Array<{ number: number; status: number | null; outcome: string }>;
}

/**
 * A workspace's webhook attempts in flight are bounded across workers (WEBHOOK_ATTEMPTS_PER_WORKSPACE),
 * so that its receivers that never answer cannot hold every attempt slot of the workers (a twenty-third
 * probe: another account's delivery waited out their timeout). Real PostgreSQL, Temporal and receiver;
 * here a worker runs 4 attempts at once and a workspace 2.
 */
describe('webhook attempts in flight, bounded per workspace', () => {
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
        WEBHOOK_ATTEMPTS_PER_WORKSPACE: 2,
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

  it("keeps a workspace whose receivers hang to 2 attempts at once, so another workspace's delivery is sent while they hang, and records no attempt for a refused slot", async () => {
    const hanging = await h.provision('build');
    const paths = ['/hang-1', '/hang-2', '/hang-3', '/hang-4'];
    const hooks: string[] = [];
    for (const path of paths) {
      // the first attempt hangs until the 6 s timeout, the second is answered
      receiver.script(path, [{ status: 200, hang: true }, { status: 204 }]);
      hooks.push(await endpoint(hanging.adminKey, path));
    }
    for (const hook of hooks) expect((await h.http.post(`/v1/webhooks/${hook}/test`).set('X-API-Key', hanging.adminKey)).status).toBe(202);
    const deadline = Date.now() + 30_000;
    while (paths.flatMap((p) => receiver.at(p)).length < 2) {
      if (Date.now() > deadline) throw new Error('the hanging workspace made no attempts');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    // Four attempts would fill the worker's four slots; the bound leaves two of them free.
    const other = await h.provision('build');
    const otherHook = await endpoint(other.adminKey, '/prompt');
    expect((await h.http.post(`/v1/webhooks/${otherHook}/test`).set('X-API-Key', other.adminKey)).status).toBe(202);
    const [sent] = await receiver.waitFor('/prompt', 1);
    const firstHung = paths.flatMap((p) => receiver.at(p)).slice(0, 2);
    for (const hung of firstHung) expect(hung.closedAt ?? Number.POSITIVE_INFINITY).toBeGreaterThan(sent!.at);
    expect((await settled(other.adminKey, otherHook)).state).toBe('succeeded');

    const delivered = await Promise.all(hooks.map((hook) => settled(hanging.adminKey, hook)));
    expect(receiver.maxOpen(paths)).toBe(2);
    for (const delivery of delivered) {
      expect(delivery.attempts.map((a) => [a.number, a.status, a.outcome])).toEqual([
        [1, null, 'retry'],
        [2, 204, 'succeeded'],
      ]);
    }
    // the two deliveries that waited for a slot asked for one more often than they made attempts
    const asked = await Promise.all(
      delivered.map(async (d) => {
        const history = await h.client.workflow.getHandle(`delivery/${d.id}`).fetchHistory();
        return (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).length;
      }),
    );
    expect(asked.filter((n) => n > 2).length).toBeGreaterThanOrEqual(2);
    const [live] = await h.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ n: string }>>(`select count(*) as n from webhook_attempt_slots where workspace_id = ? and expires_at > now()`, [hanging.workspace.id]);
    expect(Number(live!.n)).toBe(0);
  }, 120_000);

  it('gives 20 attempts claiming at once exactly the 5 slots of their workspace, distinct, and frees a slot on release or when its lease ends', async () => {
    const { workspace } = await h.provision('build');
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => claimAttemptSlot(h.orm.em.fork(), workspace.id, `dlv_race${i}`, 5, 60_000)));
    const held = claims.filter((c) => c !== null);
    expect(held).toHaveLength(5);
    expect(new Set(held.map((c) => c.slot))).toEqual(new Set([0, 1, 2, 3, 4]));

    expect(await claimAttemptSlot(h.orm.em.fork(), workspace.id, 'dlv_late', 5, 60_000)).toBeNull();
    // an attempt retried after its worker was lost takes back its delivery's slot
    expect(await claimAttemptSlot(h.orm.em.fork(), workspace.id, held[0]!.deliveryId, 5, 60_000)).toEqual(held[0]);

    await releaseAttemptSlot(h.orm.em.fork(), held[1]!);
    expect(await claimAttemptSlot(h.orm.em.fork(), workspace.id, 'dlv_after_release', 5, 60_000)).toEqual(expect.objectContaining({ slot: held[1]!.slot }));

    // a lease of a worker that died runs out and its slot is taken, not waited for
    await h.orm.em.fork().getConnection().execute(`update webhook_attempt_slots set expires_at = now() - interval '1 second' where workspace_id = ? and slot = ?`, [workspace.id, held[2]!.slot]);
    expect(await claimAttemptSlot(h.orm.em.fork(), workspace.id, 'dlv_after_expiry', 5, 60_000)).toEqual(expect.objectContaining({ slot: held[2]!.slot }));
    // the dead attempt's late release frees nothing it no longer holds
    await releaseAttemptSlot(h.orm.em.fork(), held[2]!);
    expect(await claimAttemptSlot(h.orm.em.fork(), workspace.id, 'dlv_late', 5, 60_000)).toBeNull();
  });
});
