import type { ChildProcess } from 'node:child_process';
import pino from 'pino';
import { recordEvent } from '../../services/webhooks/events';
import { DeliveryRelay } from '../../services/webhooks/relay';
import { webhookSettings } from '../../services/webhooks/settings';
import { startHarness, type Harness } from '../support/harness';
import { killProcessGroup, spawnServiceProcess, startInProcessWorker } from '../support/processes';
import { WebhookReceiver, verify } from '../support/webhook-receiver';

interface DeliveryView {
  id: string;
  state: string;
  attempts: Array<{ number: number; status: number | null }>;
}

/**
 * Durable emission: the event and its deliveries commit with the change; nothing else has to survive.
 * No worker runs in this process until a test starts one.
 */
describe('webhook outbox: no event lost or sent twice when processes die', () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  let child: ChildProcess | null = null;
  beforeAll(async () => {
    h = await startHarness({ withoutWorker: true, config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true, WEBHOOK_RETRY_DELAYS: '0s,500ms', WEBHOOK_RELAY_EVERY_MS: 100 } });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    killProcessGroup(child);
    await receiver?.stop();
    await h?.stop();
  });

  async function settledDeliveries(adminKey: string, webhookId: string, count: number): Promise<DeliveryView[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const listed = (await h.http.get(`/v1/webhooks/${webhookId}/deliveries`).set('X-API-Key', adminKey)).body.data as DeliveryView[];
      if (listed.length >= count && listed.every((d) => d.state !== 'pending')) return listed;
      if (Date.now() > deadline) throw new Error(`not settled: ${JSON.stringify(listed)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('starts deliveries committed by a process that died before starting them, and a claim left by a dead relay, each exactly once', async () => {
    const { adminKey, workspace } = await h.provision('build');
    const hook = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/outbox') });
    // What a process leaves behind when it dies right after its commit: the outbox rows and no workflow.
    const em = h.orm.em.fork();
    const event = (message: string, dedupeKey: string) => ({
      workspaceId: workspace.id,
      type: 'webhook.test' as const,
      data: { webhook_id: hook.body.id, message },
      dedupeKey,
      endpointId: hook.body.id,
    });
    const committed = await em.transactional((tx) => recordEvent(tx, event('committed, never started', 'test:crash-1')));
    const claimed = await em.transactional((tx) => recordEvent(tx, event('claimed by a relay that died', 'test:crash-2')));
    // The same change recorded again (a retried activity): no second event.
    expect(await em.transactional((tx) => recordEvent(tx, event('again', 'test:crash-1')))).toBeNull();
    await em.getConnection().execute(`update webhook_deliveries set dispatch_claimed_until = now() + interval '2 seconds' where id = ?`, [claimed!.deliveryIds[0]]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.at('/outbox')).toHaveLength(0);

    const worker = await startInProcessWorker(h);
    try {
      const delivered = await settledDeliveries(adminKey, hook.body.id, 2);
      expect(delivered.map((d) => d.state)).toEqual(['succeeded', 'succeeded']);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const requests = receiver.at('/outbox');
      expect(requests.map((r) => r.headers['webhook-id']).sort()).toEqual([committed!.eventId, claimed!.eventId].sort());
      for (const r of requests) verify(hook.body.secret, r);
      const rows = await em.getConnection().execute<Array<{ dispatched_at: Date | null }>>('select dispatched_at from webhook_deliveries where endpoint_id = ?', [hook.body.id]);
      expect(rows.every((r) => r.dispatched_at !== null)).toBe(true);
    } finally {
      await worker.stop();
    }
  });

  it('completes a delivery whose worker was killed mid-attempt: Temporal retries it on another worker', async () => {
    child = spawnServiceProcess('worker', h.taskQueue, {
      LOG_LEVEL: 'warn',
      ENGINE_THREADS: '1',
      WEBHOOKS_ALLOW_LOOPBACK_HTTP: 'true',
      WEBHOOK_RETRY_DELAYS: '0s,500ms',
      WEBHOOK_TIMEOUT_SECONDS: '2',
      WEBHOOK_RELAY_EVERY_MS: '100',
    });
    const { adminKey } = await h.provision('build');
    // The first request is held open: the worker dies while it waits for the answer.
    receiver.script('/killed', [{ status: 200, hang: true }, { status: 200 }]);
    const hook = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/killed') });
    const sent = await h.http.post(`/v1/webhooks/${hook.body.id}/test`).set('X-API-Key', adminKey);
    expect(sent.status).toBe(202);
    await receiver.waitFor('/killed', 1, 90_000);
    killProcessGroup(child);

    const worker = await startInProcessWorker(h);
    try {
      const [delivery] = await settledDeliveries(adminKey, hook.body.id, 1);
      expect(delivery).toEqual(expect.objectContaining({ id: sent.body.delivery_id, state: 'succeeded' }));
      // One attempt of the schedule, made twice by Temporal: the receiver saw the same webhook-id again.
      expect(delivery!.attempts).toEqual([expect.objectContaining({ number: 1, status: 200 })]);
      const requests = receiver.at('/killed');
      expect(requests).toHaveLength(2);
      expect(requests[1]!.headers['webhook-id']).toBe(sent.body.event_id);
      verify(hook.body.secret, requests[1]!);
      const history = await h.client.workflow.getHandle(`delivery/${delivery!.id}`).fetchHistory();
      const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => Number(e.activityTaskStartedEventAttributes?.attempt));
      expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
    } finally {
      await worker.stop();
    }
  });
  it("starts waiting deliveries workspace by workspace in turn: one workspace's 150 leave room in the relay's first pass for another's newer one (a twenty-sixth probe: another account's event waited 20 s behind such a backlog)", async () => {
    const busy = await h.provision('build');
    const quiet = await h.provision('build');
    const hookOf = async (adminKey: string) => (await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/fair') })).body.id as string;
    const [busyHook, quietHook] = [await hookOf(busy.adminKey), await hookOf(quiet.adminKey)];
    const em = h.orm.em.fork();
    const testEvent = (workspaceId: string, endpointId: string, n: number) => ({ workspaceId, type: 'webhook.test' as const, data: { webhook_id: endpointId }, dedupeKey: `test:fair-${endpointId}-${n}`, endpointId });
    for (let i = 0; i < 150; i += 1) await em.transactional((tx) => recordEvent(tx, testEvent(busy.workspace.id, busyHook, i)));
    const late = await em.transactional((tx) => recordEvent(tx, testEvent(quiet.workspace.id, quietHook, 0)));
    // a relay of its own, whose workflows go to a queue no worker polls: only what it starts is looked at
    const relay = new DeliveryRelay(h.orm, h.client, `${h.taskQueue}-fairness`, webhookSettings(h.config).relay, pino({ level: 'silent' }));
    expect(await relay.dispatch()).toBe(100);
    const [row] = await em.getConnection().execute<Array<{ dispatched_at: Date | null }>>(`select dispatched_at from webhook_deliveries where id = ?`, [late!.deliveryIds[0]]);
    expect(row!.dispatched_at).not.toBeNull();
  });
});
