import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTestServer } from '../../scripts/lib/temporal-dev-server';
import { installRuntimeOnce } from '../../services/temporal/worker';
import { toolsDir } from '../support/env';
import { expectError, startHarness, type Harness } from '../support/harness';

/**
 * The rotation grace is a durable Temporal timer. On the time-skipping test server a week passes in
 * seconds: the old key still works on day 6 and is refused after day 7.
 */
describe('rotation grace on a durable timer (time-skipping Temporal)', () => {
  let env: TestWorkflowEnvironment;
  let h: Harness;

  beforeAll(async () => {
    installRuntimeOnce();
    env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: findTestServer(toolsDir) } },
    });
    h = await startHarness({ temporal: { client: env.client, nativeConnection: env.nativeConnection } });
  });
  afterAll(async () => {
    await h?.stop();
    await env?.teardown();
  });

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
