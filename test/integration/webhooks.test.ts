import pino from 'pino';
import { createActivities } from '../../activities';
import { webhookSettings } from '../../services/webhooks/settings';
import { WebhookEndpointSchema } from '../../db/entities';
import { requestAccountDeletion } from '../../services/account-deletion';
import { recordEvent } from '../../services/webhooks/events';
import { createWorkspace } from '../../services/workspaces';
import { createKey } from '../../services/api-keys';
import { churnRows } from '../support/datasets';
import { expectError, startHarness, trainedChurnModel, type Harness } from '../support/harness';
import { WebhookReceiver, verify, type Received } from '../support/webhook-receiver';

interface Delivery {
  id: string;
  state: string;
  event_type: string;
  attempts: Array<{ number: number; status: number | null; error: string | null; outcome: string; started_at: string }>;
  payload: { id: string; type: string; data: Record<string, unknown> };
}

/**
 * Outgoing webhooks over HTTP, with real PostgreSQL and Temporal and a real local receiver that
 * verifies every signature with the standardwebhooks package. The retry schedule is scaled down here
 * (the real one runs on the time-skipping server in webhooks-schedule.test.ts).
 */
describe('outgoing webhooks', () => {
  let h: Harness;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    h = await startHarness({
      config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true, WEBHOOK_RETRY_DELAYS: '0s,300ms,300ms,300ms', WEBHOOK_TIMEOUT_SECONDS: 2, WEBHOOK_RELAY_EVERY_MS: 100 },
    });
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await h?.stop();
  });

  let pathCounter = 0;
  const freshPath = () => `/hook-${(pathCounter += 1)}`;

  async function endpoint(adminKey: string, path: string, body: Record<string, unknown> = {}) {
    const res = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url(path), ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  }

  async function deliveries(adminKey: string, webhookId: string): Promise<Delivery[]> {
    const res = await h.http.get(`/v1/webhooks/${webhookId}/deliveries`).set('X-API-Key', adminKey);
    expect(res.status).toBe(200);
    return res.body.data as Delivery[];
  }

  async function settled(adminKey: string, webhookId: string, count = 1, timeoutMs = 30_000): Promise<Delivery[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const listed = await deliveries(adminKey, webhookId);
      if (listed.length >= count && listed.every((d) => d.state !== 'pending')) return listed;
      if (Date.now() > deadline) throw new Error(`deliveries not settled: ${JSON.stringify(listed.map((d) => [d.state, d.attempts.length]))}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const typesAt = (path: string): string[] => receiver.at(path).map((r: Received) => (JSON.parse(r.body) as { type: string }).type);

  describe('routes', () => {
    it('creates (secret once, encrypted at rest), lists, reads, patches and deletes; no events means every event', async () => {
      const { adminKey, workspace } = await h.provision('build');
      const created = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/crud') });
      expect(created.status).toBe(201);
      expect(created.body).toEqual(
        expect.objectContaining({ url: receiver.url('/crud'), active: true, all_events: true, events: ['model.trained', 'model.refreshed', 'model.stale', 'credits.low'], workspace_id: workspace.id }),
      );
      expect(created.body.id).toMatch(/^whk_[0-9A-Za-z]{22}$/);
      expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(32);
      const row = await h.orm.em.fork().findOneOrFail(WebhookEndpointSchema, { id: created.body.id });
      expect(JSON.stringify(row)).not.toContain(created.body.secret.slice(6));

      const listed = await h.http.get('/v1/webhooks').set('X-API-Key', adminKey);
      expect(listed.body.data).toHaveLength(1);
      expect(listed.body.data[0]).not.toHaveProperty('secret');
      expect(listed.body.pagination).toEqual({ total: 1, limit: 50, offset: 0, has_more: false });

      const patched = await h.http.patch(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey).send({ events: ['model.trained'], active: false });
      expect(patched.status).toBe(200);
      expect(patched.body).toEqual(expect.objectContaining({ events: ['model.trained'], all_events: false, active: false, disabled_reason: expect.any(String) }));
      const back = await h.http.patch(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey).send({ events: null, active: true, url: receiver.url('/crud2') });
      expect(back.body).toEqual(expect.objectContaining({ all_events: true, active: true, disabled_reason: null, url: receiver.url('/crud2') }));
      expect((await h.http.get(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey)).status).toBe(200);

      expect((await h.http.delete(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey)).status).toBe(204);
      expectError(await h.http.get(`/v1/webhooks/${created.body.id}`).set('X-API-Key', adminKey), 404, 'NOT_FOUND');
    });

    it('reads events: null at creation as every event kind, as PATCH does (a probe: create refused the null PATCH takes)', async () => {
      const { adminKey } = await h.provision('build');
      const created = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/null-events'), events: null });
      expect(created.status).toBe(201);
      expect(created.body).toEqual(expect.objectContaining({ all_events: true, events: ['model.trained', 'model.refreshed', 'model.stale', 'credits.low'] }));
    });

    it('refuses a duplicate URL (create and patch), the 11th webhook, bad bodies and usage keys, changing nothing', async () => {
      const { adminKey, apiKey } = await h.provision('build');
      const first = await endpoint(adminKey, '/dup');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/dup') }), 409, 'WEBHOOK_URL_EXISTS');
      // The same URL spelled differently is the same URL.
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/dup#x') }), 409, 'WEBHOOK_URL_EXISTS');
      // An unreserved character percent-encoded, or an empty query, is the same URL too (RFC 3986 §6.2.2).
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/%64%75p') }), 409, 'WEBHOOK_URL_EXISTS');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/dup?') }), 409, 'WEBHOOK_URL_EXISTS');
      const escaped = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/%7epath%2fx?q=%7e%2f') });
      expect(escaped.status).toBe(201);
      expect(escaped.body.url).toBe(receiver.url('/~path%2Fx?q=~%2F'));
      expect((await h.http.delete(`/v1/webhooks/${escaped.body.id}`).set('X-API-Key', adminKey)).status).toBe(204);
      // A host name's trailing dot (fully qualified) names the same host: stored without it, so it is the same URL.
      const port = new URL(receiver.url('/')).port;
      const named = await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: `http://localhost.:${port}/fqdn` });
      expect(named.status).toBe(201);
      expect(named.body.url).toBe(`http://localhost:${port}/fqdn`);
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: `http://localhost:${port}/fqdn` }), 409, 'WEBHOOK_URL_EXISTS');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: `http://LOCALHOST..:${port}/fqdn` }), 409, 'WEBHOOK_URL_EXISTS');
      expect((await h.http.delete(`/v1/webhooks/${named.body.id}`).set('X-API-Key', adminKey)).status).toBe(204);
      const second = await endpoint(adminKey, '/dup-2');
      expectError(await h.http.patch(`/v1/webhooks/${second.id}`).set('X-API-Key', adminKey).send({ url: receiver.url('/dup') }), 409, 'WEBHOOK_URL_EXISTS');
      for (let i = 3; i <= 10; i += 1) await endpoint(adminKey, `/limit-${i}`);
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/limit-11') }), 409, 'TOO_MANY_WEBHOOKS');
      expect((await h.http.get('/v1/webhooks').set('X-API-Key', adminKey)).body.pagination.total).toBe(10);

      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/x'), events: ['model.exploded'] }), 400, 'VALIDATION_ERROR');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({ url: receiver.url('/x'), events: [] }), 400, 'VALIDATION_ERROR');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', adminKey).send({}), 400, 'VALIDATION_ERROR');
      expectError(await h.http.patch(`/v1/webhooks/${first.id}`).set('X-API-Key', adminKey).send({ secret: 'x' }), 400, 'VALIDATION_ERROR');
      expectError(await h.http.get('/v1/webhooks').set('X-API-Key', apiKey), 403, 'ADMIN_KEY_REQUIRED');
      expectError(await h.http.post('/v1/webhooks').set('X-API-Key', apiKey).send({ url: receiver.url('/x') }), 403, 'ADMIN_KEY_REQUIRED');
    });

    it("answers 404 for another tenant's webhook on every route, and lists only the caller's", async () => {
      const owner = await h.provision('build');
      const other = await h.provision('build');
      const hook = await endpoint(owner.adminKey, '/tenant');
      const as = other.adminKey;
      expectError(await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', as), 404, 'NOT_FOUND');
      expectError(await h.http.patch(`/v1/webhooks/${hook.id}`).set('X-API-Key', as).send({ active: false }), 404, 'NOT_FOUND');
      expectError(await h.http.delete(`/v1/webhooks/${hook.id}`).set('X-API-Key', as), 404, 'NOT_FOUND');
      expectError(await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', as), 404, 'NOT_FOUND');
      expectError(await h.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set('X-API-Key', as).send({}), 404, 'NOT_FOUND');
      expectError(await h.http.get(`/v1/webhooks/${hook.id}/deliveries`).set('X-API-Key', as), 404, 'NOT_FOUND');
      expect((await h.http.get('/v1/webhooks').set('X-API-Key', as)).body.data).toEqual([]);
      expect((await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', owner.adminKey)).body.active).toBe(true);
    });
  });

  describe('delivery', () => {
    it('delivers a test event with Standard Webhooks headers that verify with the secret, and records the attempt', async () => {
      const { adminKey, workspace } = await h.provision('build');
      const path = freshPath();
      const hook = await endpoint(adminKey, path);
      const sent = await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      expect(sent.status).toBe(202);
      const [request] = await receiver.waitFor(path, 1);
      const payload = verify(hook.secret, request!);
      expect(payload).toEqual({ id: sent.body.event_id, type: 'webhook.test', created_at: expect.stringMatching(/Z$/), workspace_id: workspace.id, data: expect.objectContaining({ webhook_id: hook.id }) });
      expect(Object.keys(payload)).toEqual(['id', 'type', 'created_at', 'workspace_id', 'data']);
      expect(request!.headers['webhook-id']).toBe(sent.body.event_id);
      expect(request!.headers['content-type']).toBe('application/json');
      expect(() => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, request!)).toThrow();

      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery).toEqual(expect.objectContaining({ id: sent.body.delivery_id, state: 'succeeded', event_type: 'webhook.test' }));
      expect(delivery!.attempts).toEqual([expect.objectContaining({ number: 1, status: 200, outcome: 'succeeded', error: null })]);
      expect(await h.client.workflow.getHandle(`delivery/${delivery!.id}`).result()).toEqual({ outcome: 'succeeded', attempts: 1 });
    });

    it('runs its workflow and its attempts on a task queue of their own, the account as the workflow\'s fairness key and the workspace as the attempts\': a receiver that never answers holds none of the activity slots, and deliveries waiting for slots none of the workflow tasks, that trainings, refreshes, purchases and erasures need (a sixteenth probe: another account\'s refresh waited 88 s behind such attempts; a twenty-seventh: 500 test events delayed other accounts\' trainings by a minute and purchases by two)', async () => {
      const { adminKey, workspace, account } = await h.provision('build');
      const path = freshPath();
      const hook = await endpoint(adminKey, path);
      const sent = await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      expect(sent.status).toBe(202);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('succeeded');
      const history = await h.client.workflow.getHandle(`delivery/${delivery!.id}`).fetchHistory();
      const scheduled = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes).filter((a) => a !== null && a !== undefined);
      expect(scheduled.map((a) => [a.activityType?.name, a.taskQueue?.name, a.priority?.fairnessKey])).toEqual([['attemptDelivery', `${h.taskQueue}-deliveries`, workspace.id]]);
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      expect([started?.taskQueue?.name, started?.priority?.fairnessKey]).toEqual([`${h.taskQueue}-deliveries`, account.id]);
    });

    it('retries a receiver that fails (500, then a timeout) until it answers 2xx, recording every attempt', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 500, body: 'boom' }, { status: 200, hang: true }, { status: 204 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('succeeded');
      expect(delivery!.attempts.map((a) => [a.number, a.status, a.outcome])).toEqual([
        [1, 500, 'retry'],
        [2, null, 'retry'],
        [3, 204, 'succeeded'],
      ]);
      expect(delivery!.attempts[0]).toEqual(expect.objectContaining({ error: 'The endpoint answered 500.' }));
      expect((delivery!.attempts[0] as unknown as { response_excerpt: string }).response_excerpt).toBe('boom');
      expect(delivery!.attempts[1]!.error).toMatch(/No answer within 2 s/);
      const requests = receiver.at(path);
      expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
      for (const r of requests) verify(hook.secret, r);
      const hookNow = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(hookNow.body).toEqual(expect.objectContaining({ failing_since: null, last_success_at: expect.any(String) }));
    });

    it('records a 2xx whose body holds a NUL byte as one successful attempt (the byte kept as U+FFFD), and sends the event once', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 200, body: 'a\u0000b' }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('succeeded');
      expect(delivery!.attempts.map((a) => [a.number, a.status, a.outcome])).toEqual([[1, 200, 'succeeded']]);
      expect((delivery!.attempts[0] as unknown as { response_excerpt: string }).response_excerpt).toBe('a\uFFFDb');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.at(path)).toHaveLength(1);
    });

    it('gives up after the last attempt of the schedule and keeps the endpoint active', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 502 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('failed');
      expect(delivery!.attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'retry', 'failed']);
      const after = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ active: true, failing_since: expect.any(String) }));
    });

    it('stops the webhooks of an account asked to be deleted: before its erasure, a new event of its workspace reaches no receiver (an eleventh probe)', async () => {
      const { adminKey, account, workspace } = await h.provision('build');
      const path = freshPath();
      const hook = await endpoint(adminKey, path);
      // DELETE /v1/auth/me's first half; its erasure (held up, e.g., while Stripe is down) has not run.
      await requestAccountDeletion(h.orm.em.fork(), account.id, account.email, new Date());
      // the daily model.stale check still sees the account's serving models until they are erased
      const recorded = await h.orm.em.fork().transactional((tx) => recordEvent(tx, { workspaceId: workspace.id, type: 'model.stale', data: {}, dedupeKey: null }));
      expect(recorded!.deliveryIds).toEqual([]);
      const stored = await h.orm.em.fork().findOneOrFail(WebhookEndpointSchema, { id: hook.id });
      expect(stored).toEqual(expect.objectContaining({ active: false, disabledReason: 'The account was deleted.' }));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.at(path)).toHaveLength(0);
    });

    it('disables the endpoint on 410 Gone, shows why, and sends it nothing more', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 410 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('failed');
      expect(delivery!.attempts).toHaveLength(1);
      const after = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ active: false, disabled_reason: expect.stringContaining('410') }));
      expectError(await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey), 409, 'WEBHOOK_INACTIVE');
      expect(receiver.at(path)).toHaveLength(1);
    });

    it('disables an endpoint with no successful delivery for 5 days at its next failure', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 500 }]);
      const hook = await endpoint(adminKey, path);
      // failing for 5 days, its last failed attempt two hours ago (a retry of the schedule)
      await h.orm.em.fork().nativeUpdate(WebhookEndpointSchema, { id: hook.id }, { failingSince: new Date(Date.now() - 5 * 86_400_000 - 60_000), lastFailureAt: new Date(Date.now() - 2 * 3_600_000) });
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.attempts).toHaveLength(1);
      const after = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ active: false, disabled_reason: expect.stringMatching(/No successful delivery for 5 days/) }));
    });

    it('restarts the failure clock after a quiet spell: an endpoint whose last failure was a week ago is retried on the schedule at its next failure, not disabled (a fourteenth probe\'s endpoint was disabled by one failed first attempt after a quiet week)', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 503 }, { status: 200 }]);
      const hook = await endpoint(adminKey, path);
      // a delivery failed its whole schedule eight days ago, and no event came since
      const weekAgo = new Date(Date.now() - 7 * 86_400_000);
      await h.orm.em.fork().nativeUpdate(WebhookEndpointSchema, { id: hook.id }, { failingSince: new Date(Date.now() - 8 * 86_400_000), lastFailureAt: weekAgo });
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.attempts.map((a) => [a.status, a.outcome])).toEqual([[503, 'retry'], [200, 'succeeded']]);
      const after = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ active: true, failing_since: null, disabled_reason: null }));
      // the first failure of the new spell started the clock again, at its own time
      const [row] = await h.orm.em.fork().getConnection().execute<Array<{ last_failure_at: Date }>>(`select last_failure_at from webhook_endpoints where id = ?`, [hook.id]);
      expect(new Date(row!.last_failure_at).getTime()).toBeGreaterThan(weekAgo.getTime() + 6 * 86_400_000);
    });

    it('restarts the failure clock when the URL changes: the new receiver is retried on the schedule, not disabled at its first failure for the old URL’s 5 days', async () => {
      const { adminKey } = await h.provision('build');
      const hook = await endpoint(adminKey, freshPath());
      // the old receiver failed for more than 5 days, with no attempt since its last failure
      await h.orm.em.fork().nativeUpdate(WebhookEndpointSchema, { id: hook.id }, { failingSince: new Date(Date.now() - 5 * 86_400_000 - 60_000) });
      const moved = freshPath();
      receiver.script(moved, [{ status: 503 }, { status: 200 }]);
      const patched = await h.http.patch(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey).send({ url: receiver.url(moved) });
      expect(patched.status).toBe(200);
      expect(patched.body.failing_since).toBeNull();
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.state).toBe('succeeded');
      expect(delivery!.attempts.map((a) => [a.status, a.outcome])).toEqual([[503, 'retry'], [200, 'succeeded']]);
      const after = await h.http.get(`/v1/webhooks/${hook.id}`).set('X-API-Key', adminKey);
      expect(after.body).toEqual(expect.objectContaining({ active: true, failing_since: null, disabled_reason: null }));
    });

    it('honours Retry-After on 429 and 503 as a least wait, longer than the schedule here', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 429, headers: { 'Retry-After': '2' } }, { status: 503, headers: { 'Retry-After': '1' } }, { status: 200 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.attempts.map((a) => a.status)).toEqual([429, 503, 200]);
      const [a, b, c] = receiver.at(path);
      // The scaled schedule waits 300 ms; the receiver asked for 2 s, then 1 s.
      expect(b!.at - a!.at).toBeGreaterThanOrEqual(1900);
      expect(c!.at - b!.at).toBeGreaterThanOrEqual(900);
    });

    it('takes a Retry-After of 0, a date passed or one that is no whole seconds as no wait of its own, keeping the schedule (a twenty-third probe: they spent the whole schedule in a second and lost the event)', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 503, headers: { 'Retry-After': '0' } }, { status: 429, headers: { 'Retry-After': 'Thu, 01 Jan 2026 00:00:00 GMT' } }, { status: 503, headers: { 'Retry-After': '-5' } }, { status: 200 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.attempts.map((a) => a.status)).toEqual([503, 429, 503, 200]);
      const times = receiver.at(path).map((r) => r.at);
      // the scaled schedule waits 300 ms (± 10 %) between attempts
      for (let i = 1; i < times.length; i += 1) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(250);
    });

    it('never follows a redirect, even to a private address: a 3xx is a failed attempt', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      receiver.script(path, [{ status: 302, headers: { Location: 'http://169.254.169.254/latest/meta-data/' } }, { status: 307, headers: { Location: receiver.url('/redirect-target') } }, { status: 200 }]);
      const hook = await endpoint(adminKey, path);
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [delivery] = await settled(adminKey, hook.id);
      expect(delivery!.attempts.map((a) => [a.status, a.outcome])).toEqual([
        [302, 'retry'],
        [307, 'retry'],
        [200, 'succeeded'],
      ]);
      expect(delivery!.attempts[0]!.error).toMatch(/redirects are not followed/);
      expect(receiver.at('/redirect-target')).toHaveLength(0);
    });

    it('rotates the secret: during the overlap both secrets sign; with no overlap only the new one', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      const hook = await endpoint(adminKey, path);
      const rotated = await h.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set('X-API-Key', adminKey).send({ overlap_hours: 2 });
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).not.toBe(hook.secret);
      expect(rotated.body.previous_secret_expires_at).toEqual(expect.any(String));
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [during] = await receiver.waitFor(path, 1);
      expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
      expect(verify(rotated.body.secret, during!)).toEqual(expect.objectContaining({ type: 'webhook.test' }));
      expect(verify(hook.secret, during!)).toEqual(expect.objectContaining({ type: 'webhook.test' }));

      const again = await h.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set('X-API-Key', adminKey).send({ overlap_hours: 0 });
      expect(again.body.previous_secret_expires_at).toBeNull();
      await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      const [, after] = await receiver.waitFor(path, 2);
      expect(after!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
      expect(verify(again.body.secret, after!)).toEqual(expect.objectContaining({ type: 'webhook.test' }));
      expect(() => verify(rotated.body.secret, after!)).toThrow();
    });

    it('serialises two rotations made at once: both answered secrets sign during the overlap (the first is the second\'s previous)', async () => {
      const { adminKey } = await h.provision('build');
      // Four endpoints, each rotated twice at once: unserialised, a pair lost one of its secrets about half the time.
      await Promise.all(
        [0, 1, 2, 3].map(async () => {
          const path = freshPath();
          const hook = await endpoint(adminKey, path);
          const rotations = await Promise.all([0, 1].map(() => h.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set('X-API-Key', adminKey).send({ overlap_hours: 2 })));
          expect(rotations.map((r) => r.status)).toEqual([200, 200]);
          await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
          const [sent] = await receiver.waitFor(path, 1);
          expect(sent!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
          for (const rotated of rotations) expect(verify(rotated.body.secret, sent!)).toEqual(expect.objectContaining({ type: 'webhook.test' }));
          // The secret both rotations replaced no longer signs.
          expect(() => verify(hook.secret, sent!)).toThrow();
        }),
      );
    });

    it('lists deliveries with their attempts and redelivers one as a new delivery with the same webhook-id', async () => {
      const { adminKey } = await h.provision('build');
      const path = freshPath();
      const hook = await endpoint(adminKey, path);
      const sent = await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      await settled(adminKey, hook.id);
      const redelivered = await h.http.post(`/v1/webhooks/${hook.id}/deliveries/${sent.body.delivery_id}/redeliver`).set('X-API-Key', adminKey);
      expect(redelivered.status).toBe(202);
      expect(redelivered.body).toEqual({ delivery_id: expect.stringMatching(/^dlv_/), redelivery_of: sent.body.delivery_id });
      const listed = await settled(adminKey, hook.id, 2);
      expect(listed.map((d) => d.id)).toEqual([redelivered.body.delivery_id, sent.body.delivery_id]);
      expect(listed.every((d) => d.state === 'succeeded' && d.attempts.length === 1)).toBe(true);
      const [first, second] = receiver.at(path);
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(second!.body).toBe(first!.body);
      expectError(await h.http.post(`/v1/webhooks/${hook.id}/deliveries/dlv_nope/redeliver`).set('X-API-Key', adminKey), 404, 'NOT_FOUND');
    });

    it('refuses a test event or a redelivery with 409 TOO_MANY_PENDING_DELIVERIES while the webhook has 100 deliveries waiting, creating nothing (a twenty-sixth probe queued hundreds at a receiver that never answers)', async () => {
      const { adminKey, workspace } = await h.provision('build');
      const hook = await endpoint(adminKey, freshPath());
      const sent = await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      await settled(adminKey, hook.id);
      // 100 deliveries of the endpoint waiting (already dispatched: no workflow runs them here)
      const em = h.orm.em.fork();
      await em.getConnection().execute(
        `insert into webhook_deliveries (id, event_id, endpoint_id, workspace_id, redelivery_of, created_at, dispatched_at)
         select 'dlv_backlog' || lpad(n::text, 3, '0') || ?, ?, ?, ?, ?, now(), now() from generate_series(1, 100) n`,
        [hook.id.slice(-8), sent.body.event_id, hook.id, workspace.id, sent.body.delivery_id],
      );
      const count = async () => (await em.getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from webhook_deliveries where endpoint_id = ?`, [hook.id]))[0]!.n;
      const test = await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey);
      expectError(test, 409, 'TOO_MANY_PENDING_DELIVERIES');
      expect(test.body).toEqual(expect.objectContaining({ limit: 100, pending: 100 }));
      expectError(await h.http.post(`/v1/webhooks/${hook.id}/deliveries/${sent.body.delivery_id}/redeliver`).set('X-API-Key', adminKey), 409, 'TOO_MANY_PENDING_DELIVERIES');
      expect(await count()).toBe(101);
      // one of them ends: there is room again
      await em.getConnection().execute(`update webhook_deliveries set state = 'failed', completed_at = now() where id = (select min(id) from webhook_deliveries where endpoint_id = ? and state = 'pending')`, [hook.id]);
      expect((await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey)).status).toBe(202);
      expect(await count()).toBe(102);
    });

    it("refuses a test event or a redelivery with 409 TOO_MANY_PENDING_DELIVERIES while the account's webhooks have 200 deliveries waiting, also on an endpoint with few of them in another workspace, creating nothing (a twenty-seventh probe queued 500 over 10 endpoints)", async () => {
      const { adminKey, workspace, account } = await h.provision('build');
      const busy = [await endpoint(adminKey, freshPath()), await endpoint(adminKey, freshPath())];
      const sent = await h.http.post(`/v1/webhooks/${busy[0]!.id}/test`).set('X-API-Key', adminKey);
      await settled(adminKey, busy[0]!.id);
      const em = h.orm.em.fork();
      const other = await createWorkspace(em, account.id, 'Other');
      const otherKey = await createKey(em, other.id, { name: 'admin', kind: 'admin', expiresAt: null });
      const quiet = await endpoint(otherKey.secret, freshPath());
      // waiting (already dispatched: no workflow runs them here): 99 on each busy endpoint, each below its
      // own 100, and 2 on the quiet one: 200 for the account
      const backlog = async (hookId: string, workspaceId: string, n: number) =>
        em.getConnection().execute(
          `insert into webhook_deliveries (id, event_id, endpoint_id, workspace_id, redelivery_of, created_at, dispatched_at)
           select 'dlv_acct' || lpad(n::text, 3, '0') || ?, ?, ?, ?, ?, now(), now() from generate_series(1, ?) n`,
          [hookId.slice(-8), sent.body.event_id, hookId, workspaceId, sent.body.delivery_id, n],
        );
      await backlog(busy[0]!.id, workspace.id, 99);
      await backlog(busy[1]!.id, workspace.id, 99);
      await backlog(quiet.id, other.id, 2);
      const pending = async () =>
        (await em.getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from webhook_deliveries d join workspaces w on w.id = d.workspace_id where w.account_id = ? and d.state = 'pending'`, [account.id]))[0]!.n;
      expect(await pending()).toBe(200);
      const refused = await h.http.post(`/v1/webhooks/${quiet.id}/test`).set('X-API-Key', otherKey.secret);
      expectError(refused, 409, 'TOO_MANY_PENDING_DELIVERIES');
      expect(refused.body).toEqual(expect.objectContaining({ limit: 200, pending: 200 }));
      expectError(await h.http.post(`/v1/webhooks/${busy[0]!.id}/deliveries/${sent.body.delivery_id}/redeliver`).set('X-API-Key', adminKey), 409, 'TOO_MANY_PENDING_DELIVERIES');
      expect(await pending()).toBe(200);
      // one of them ends: there is room again
      await em.getConnection().execute(`update webhook_deliveries set state = 'failed', completed_at = now() where id = (select min(id) from webhook_deliveries where endpoint_id = ? and state = 'pending')`, [busy[1]!.id]);
      expect((await h.http.post(`/v1/webhooks/${quiet.id}/test`).set('X-API-Key', otherKey.secret)).status).toBe(202);
    });

    it('prunes finished deliveries (with their attempts) and unreferenced events after 30 days, keeping pending deliveries and events a newer delivery still sends (an eighth probe: the history grew without bound)', async () => {
      const { adminKey } = await h.provision('build');
      const hook = await endpoint(adminKey, freshPath());
      const sent: Array<{ event_id: string; delivery_id: string }> = [];
      for (let i = 0; i < 4; i++) sent.push((await h.http.post(`/v1/webhooks/${hook.id}/test`).set('X-API-Key', adminKey)).body);
      await settled(adminKey, hook.id, 4);
      const [redeliveredOld, stillPending, recent, gone] = sent as [(typeof sent)[0], (typeof sent)[0], (typeof sent)[0], (typeof sent)[0]];
      const redelivery = (await h.http.post(`/v1/webhooks/${hook.id}/deliveries/${redeliveredOld.delivery_id}/redeliver`).set('X-API-Key', adminKey)).body as { delivery_id: string };
      await settled(adminKey, hook.id, 5);
      const old = [redeliveredOld, stillPending, gone];
      await h.callPool.query(`update webhook_deliveries set created_at = now() - interval '31 days' where id = any($1)`, [old.map((s) => s.delivery_id)]);
      await h.callPool.query(`update webhook_events set created_at = now() - interval '31 days' where id = any($1)`, [old.map((s) => s.event_id)]);
      // a delivery still pending (its workflow waiting out a retry) is never pruned, whatever its age
      await h.callPool.query(`update webhook_deliveries set state = 'pending' where id = $1`, [stillPending.delivery_id]);

      const activities = createActivities({ orm: h.orm, logger: pino({ level: 'silent' }), enginePool: h.enginePool, strandedAfterMs: 120_000, fitHeartbeatTimeoutMs: 30_000, webhooks: webhookSettings(h.config).delivery, stripe: null });
      const swept = await activities.sweepEndedKeys();
      expect(swept.webhookDeliveriesPruned).toBeGreaterThanOrEqual(2);
      expect(swept.webhookEventsPruned).toBeGreaterThanOrEqual(1);

      expect((await deliveries(adminKey, hook.id)).map((d) => d.id).sort()).toEqual([redelivery.delivery_id, stillPending.delivery_id, recent.delivery_id].sort());
      const left = await h.callPool.query<{ events: string[]; attempts: number }>(
        `select array(select id from webhook_events where id = any($1) order by id) as events,
                (select count(*)::int from webhook_attempts where delivery_id = any($2)) as attempts`,
        [sent.map((s) => s.event_id), [redeliveredOld.delivery_id, gone.delivery_id]],
      );
      expect(left.rows[0]).toEqual({ events: [redeliveredOld.event_id, stillPending.event_id, recent.event_id].sort(), attempts: 0 });
    });
  });

  describe('events', () => {
    const withoutTarget = (rows: Array<Record<string, unknown>>) => rows.map(({ churned: _churned, ...rest }) => rest);

    it('sends model.trained after training and model.refreshed after a refresh, only to endpoints that subscribe', async () => {
      const account = await h.provision('build');
      const all = freshPath();
      const refreshedOnly = freshPath();
      await endpoint(account.adminKey, all);
      const onlyRefresh = await endpoint(account.adminKey, refreshedOnly, { events: ['model.refreshed'] });
      const res = await h.http.post('/v1/models').set('X-API-Key', account.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(120) });
      expect(res.status).toBe(201);
      const [trained] = await receiver.waitFor(all, 1);
      const allHook = (await h.http.get('/v1/webhooks').set('X-API-Key', account.adminKey)).body.data.find((w: { url: string }) => w.url.endsWith(all));
      expect(allHook).toBeDefined();
      const payload = JSON.parse(trained!.body);
      expect(payload).toEqual(
        expect.objectContaining({
          type: 'model.trained',
          workspace_id: account.workspace.id,
          data: expect.objectContaining({
            model: expect.objectContaining({ id: res.body.id, target: 'churned', status: 'serving' }),
            version: expect.objectContaining({ number: 1, trigger: 'train', engine: expect.objectContaining({ id: 'tabular-gbdt' }) }),
          }),
        }),
      );

      const scored = await h.http.post(`/v1/models/${res.body.id}/predict`).set('X-API-Key', account.apiKey).send({ rows: withoutTarget(churnRows(3, 5)) });
      await h.http
        .post(`/v1/models/${res.body.id}/outcomes`)
        .set('X-API-Key', account.apiKey)
        .send({ outcomes: scored.body.predictions.map((p: { request_id: string }) => ({ request_id: p.request_id, actual: 'yes' })) });
      expect((await h.http.post(`/v1/models/${res.body.id}/refresh`).set('X-API-Key', account.apiKey)).status).toBe(201);
      await receiver.waitFor(all, 2);
      const [refreshed] = await receiver.waitFor(refreshedOnly, 1);
      const refreshedPayload = verify(onlyRefresh.secret, refreshed!);
      expect(refreshedPayload).toEqual(expect.objectContaining({ type: 'model.refreshed', data: expect.objectContaining({ version: expect.objectContaining({ number: 2, trigger: 'refresh', outcomes_folded: 3 }) }) }));
      expect(typesAt(all)).toEqual(['model.trained', 'model.refreshed']);
      expect(typesAt(refreshedOnly)).toEqual(['model.refreshed']);
    });

    it('sends model.stale once per episode when the verdict leaves holding, and again only after a recovery', async () => {
      const account = await trainedChurnModel(h);
      const path = freshPath();
      await endpoint(account.adminKey, path, { events: ['model.stale'] });
      const data = churnRows(40, 11);
      const scored = await h.http.post(`/v1/models/${account.modelId}/predict`).set('X-API-Key', account.apiKey).send({ rows: withoutTarget(data) });
      const flipped = scored.body.predictions.map((p: { request_id: string; prediction: string }) => ({ request_id: p.request_id, actual: p.prediction === 'yes' ? 'no' : 'yes' }));
      await h.http.post(`/v1/models/${account.modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: flipped });

      const check = () =>
        h.client.workflow.execute<() => Promise<{ opened: number; closed: number }>>('markStaleModelsWorkflow', {
          taskQueue: h.taskQueue,
          workflowId: `test-stale-${Date.now()}-${Math.random()}`,
        });
      expect((await check()).opened).toBeGreaterThanOrEqual(1);
      const [stale] = await receiver.waitFor(path, 1);
      expect(JSON.parse(stale!.body)).toEqual(
        expect.objectContaining({ type: 'model.stale', data: expect.objectContaining({ reason: 'performance', verdict: 'dropped', model: expect.objectContaining({ id: account.modelId }) }) }),
      );
      expect((await check()).opened).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.at(path)).toHaveLength(1);

      // Outcomes that agree with the predictions: holding again, the episode closes; a relapse is a new one.
      const agreeing = scored.body.predictions.map((p: { request_id: string; prediction: string }) => ({ request_id: p.request_id, actual: p.prediction }));
      await h.orm.em.getConnection().execute('delete from outcomes where model_id = ?', [account.modelId]);
      await h.http.post(`/v1/models/${account.modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: agreeing });
      expect((await check()).closed).toBeGreaterThanOrEqual(1);
      await h.orm.em.getConnection().execute('delete from outcomes where model_id = ?', [account.modelId]);
      await h.http.post(`/v1/models/${account.modelId}/outcomes`).set('X-API-Key', account.apiKey).send({ outcomes: flipped });
      await check();
      await receiver.waitFor(path, 2);
      expect(typesAt(path)).toEqual(['model.stale', 'model.stale']);
    });

    /** A model that has served 31 days and predicted 5 rows with no outcome, and an endpoint for its model.stale. */
    const silentModel = async () => {
      const account = await trainedChurnModel(h);
      const path = freshPath();
      await endpoint(account.adminKey, path, { events: ['model.stale'] });
      expect((await h.http.post(`/v1/models/${account.modelId}/predict`).set('X-API-Key', account.apiKey).send({ rows: withoutTarget(churnRows(5, 3)) })).status).toBe(200);
      await h.orm.em.getConnection().execute(`update models set created_at = now() - interval '31 days' where id = ?`, [account.modelId]);
      return { account, path };
    };

    it('sends model.stale with reason no_outcomes for a model that has served 30 days and keeps predicting with no outcome', async () => {
      const { path } = await silentModel();
      await h.client.workflow.execute('markStaleModelsWorkflow', { taskQueue: h.taskQueue, workflowId: `test-stale-${Date.now()}-${Math.random()}` });
      const [stale] = await receiver.waitFor(path, 1);
      expect(JSON.parse(stale!.body).data).toEqual(expect.objectContaining({ reason: 'no_outcomes', last_outcome_at: null, predictions: 5, days: 30 }));
    });

    it('checks every serving model, a page of 500 at a time: a stale model behind 600 others in id order gets its model.stale', async () => {
      const { account, path } = await silentModel();
      // 600 serving copies of another account's fresh model (never stale: no prediction yet), whose ids sort first
      const other = await trainedChurnModel(h);
      const copies = `mdl_0000${Date.now()}_`;
      await h.orm.em
        .getConnection()
        .execute(`insert into models select (jsonb_populate_record(m, jsonb_build_object('id', ? || lpad(g::text, 4, '0')))).* from models m, generate_series(1, 600) g where m.id = ?`, [copies, other.modelId]);
      const [order] = await h.orm.em.getConnection().execute<Array<{ ahead: number }>>(`select count(*)::int as ahead from models where status = 'serving' and id < ?`, [account.modelId]);
      expect(order!.ahead).toBeGreaterThan(500);
      try {
        await h.client.workflow.execute('markStaleModelsWorkflow', { taskQueue: h.taskQueue, workflowId: `test-stale-${Date.now()}-${Math.random()}` });
        const [stale] = await receiver.waitFor(path, 1);
        expect(JSON.parse(stale!.body).data).toEqual(expect.objectContaining({ model: expect.objectContaining({ id: account.modelId }), reason: 'no_outcomes' }));
      } finally {
        await h.orm.em.getConnection().execute(`delete from models where id like ?`, [`${copies}%`]);
      }
    });

    it('sends credits.low once per period for each threshold crossed downwards (20 %, 5 %, 0)', async () => {
      const account = await h.provision('free');
      const path = freshPath();
      await endpoint(account.adminKey, path, { events: ['credits.low'] });
      const setRemaining = (n: number) =>
        h.orm.em.getConnection().execute(`update accounts set allowance_remaining = ?, allowance_period = to_char(now() at time zone 'utc', 'YYYY-MM') where id = ?`, [n, account.account.id]);
      const forecast = (horizon: number) =>
        h.http
          .post('/v1/forecast')
          .set('X-API-Key', account.apiKey)
          .send({ target: 'sales', horizon, data: Array.from({ length: 20 }, (_, i) => ({ date: `2026-01-${String(i + 1).padStart(2, '0')}`, sales: 100 + (i % 7) * 3 + i })) })
          .buffer(true);

      await setRemaining(205);
      expect((await forecast(5)).status).toBe(200); // 200 left: 20 % of 1,000
      expect((await forecast(5)).status).toBe(200); // 195: still past 20 %, nothing new
      await setRemaining(53);
      expect((await forecast(5)).status).toBe(200); // 48: past 5 %
      await setRemaining(5);
      expect((await forecast(5)).status).toBe(200); // 0
      await receiver.waitFor(path, 3);
      await new Promise((resolve) => setTimeout(resolve, 500));
      // Each event has its own delivery workflow: they arrive in any order, so they are compared by what they say.
      const thresholds = receiver
        .at(path)
        .map((r) => (JSON.parse(r.body) as { data: { threshold: string; remaining: number } }).data)
        .sort((a, b) => b.remaining - a.remaining);
      expect(thresholds).toEqual([
        expect.objectContaining({ threshold: '20%', remaining: 200 }),
        expect.objectContaining({ threshold: '5%', remaining: 48 }),
        expect.objectContaining({ threshold: '0', remaining: 0 }),
      ]);
    });
  });
});
