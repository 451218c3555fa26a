import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApiKeySchema } from '../../db/entities';
import { findTestServer } from '../../scripts/lib/temporal-dev-server';
import { installRuntimeOnce } from '../../services/temporal/worker';
import { toolsDir } from '../support/env';
import { expectError, startHarness, type Harness, type HarnessOptions } from '../support/harness';
import { startInProcessWorker } from '../support/processes';

/** The service's harness on a time-skipping Temporal test server of its own. */
async function startOnTimeSkippingServer(options: Omit<HarnessOptions, 'temporal'>): Promise<{ env: TestWorkflowEnvironment; h: Harness }> {
  installRuntimeOnce();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findTestServer(toolsDir) } },
  });
  const h = await startHarness({ ...options, temporal: { client: env.client, nativeConnection: env.nativeConnection } });
  return { env, h };
}

async function stopAll(env: TestWorkflowEnvironment | undefined, h: Harness | undefined): Promise<void> {
  await h?.stop();
  await env?.teardown();
}

/**
 * The rotation grace is a durable Temporal timer. On the time-skipping test server a week passes in
 * seconds: the old key still works on day 6 and is refused after day 7.
 */
describe('rotation grace on a durable timer (time-skipping Temporal)', () => {
  let env: TestWorkflowEnvironment;
  let h: Harness;

  beforeAll(async () => {
    ({ env, h } = await startOnTimeSkippingServer({}));
  });
  afterAll(() => stopAll(env, h));

  it('keeps the old key working on day 6 and answers 401 after day 7', async () => {
    const account = await h.provision();
    const listed = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
    const oldAdmin = listed.body.data.find((k: { kind: string }) => k.kind === 'admin');

    const rotated = await h.http.post(`/v1/api-keys/${oldAdmin.id}/rotate`).set('X-API-Key', account.adminKey).send({});
    expect(rotated.status).toBe(201);
    const handle = env.client.workflow.getHandle(`key-grace/${oldAdmin.id}`);

    await env.sleep('6d');
    expect((await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey)).status).toBe(200);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    await env.sleep('25h');
    expect(await handle.result()).toEqual({ revoked: true });
    const refused = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
    expectError(refused, 401, 'API_KEY_INVALID');
    expect(refused.body.messageDetail).toMatch(/revoked/);

    const after = await h.http.get('/v1/api-keys').set('X-API-Key', rotated.body.secret);
    expect(after.status).toBe(200);
    const old = after.body.data.find((k: { id: string }) => k.id === oldAdmin.id);
    expect(old).toEqual(expect.objectContaining({ status: 'revoked', revoke_reason: 'rotated' }));
  });
});

/**
 * The grace's timer lives in Temporal, not in a worker: a worker lost while it waits (shut down here,
 * the in-process stand-in for a killed one) and days with no worker at all change nothing; the next
 * worker to start ends the grace, once.
 */
describe('rotation grace across a lost worker (time-skipping Temporal)', () => {
  let env: TestWorkflowEnvironment;
  let h: Harness;

  beforeAll(async () => {
    ({ env, h } = await startOnTimeSkippingServer({ withoutWorker: true }));
  });
  afterAll(() => stopAll(env, h));

  it('the old key is revoked by the next worker after the first was lost mid-grace, and the twin keeps working', async () => {
    const account = await h.provision();
    const listed = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
    const oldAdmin = listed.body.data.find((k: { kind: string }) => k.kind === 'admin');

    // Without a workflow cache: a real server hands a lost worker's sticky tasks to the shared queue
    // after 5 s, the time-skipping test server never does (its time stands still meanwhile).
    const first = await startInProcessWorker(h, env.nativeConnection, { maxCachedWorkflows: 0 });
    const rotated = await h.http.post(`/v1/api-keys/${oldAdmin.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: 7 });
    expect(rotated.status).toBe(201);
    const handle = env.client.workflow.getHandle(`key-grace/${oldAdmin.id}`);
    await env.sleep('2d');
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await first.stop();

    // Four days with no worker at all (the test server advances time only up to a workflow task
    // nobody can take, so the timer itself fires once the next worker polls).
    await env.sleep('4d');
    expect((await handle.describe()).status.name).toBe('RUNNING');
    const before = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: oldAdmin.id });
    expect(before.revokedAt).toBeNull();

    const second = await startInProcessWorker(h, env.nativeConnection);
    try {
      expect(await handle.result()).toEqual({ revoked: true });
    } finally {
      await second.stop();
    }
    const after = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: oldAdmin.id });
    expect(after.revokedAt).not.toBeNull();
    expect(after.revokeReason).toBe('rotated');
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey), 401, 'API_KEY_INVALID');
    expect((await h.http.get('/v1/api-keys').set('X-API-Key', rotated.body.secret)).status).toBe(200);
  });
});
