import request from 'supertest';
import { createKey } from '../../services/api-keys';
import { expectError, signInByMail, startHarness, type Harness } from '../support/harness';

/**
 * Idempotency-Key on the writes the contract does not name (workspaces, keys, webhooks; billing in
 * billing.test.ts): a nineteenth probe's retried `POST /v1/workspaces` made two workspaces and a retried
 * `POST /v1/api-keys` a second live key whose secret only the lost answer held.
 */
describe('Idempotency-Key on the other writes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { WEBHOOKS_ALLOW_LOOPBACK_HTTP: true } });
  });
  afterAll(() => h.stop());

  const storedBody = async (workspaceId: string, key: string): Promise<string> => {
    const rows = await h.orm.em.fork().getConnection().execute<Array<{ response_body: string }>>(`select response_body from idempotency_records where workspace_id = ? and key = ?`, [workspaceId, key]);
    expect(rows).toHaveLength(1);
    return rows[0]!.response_body;
  };

  it('a retried key creation makes one key and replays its secret, kept sealed in the stored answer; another credential of the workspace sending the same key and body is refused', async () => {
    const { adminKey, workspace } = await h.provision('build');
    const send = (credential: string) => h.http.post('/v1/api-keys').set('X-API-Key', credential).set('Idempotency-Key', 'make-ci-key').send({ name: 'ci' });
    const first = await send(adminKey);
    const retry = await send(adminKey);
    expect([first.status, retry.status, retry.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
    expect(retry.body).toEqual(first.body);
    const listed = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(listed.body.data.filter((k: { name: string }) => k.name === 'ci').map((k: { id: string }) => k.id)).toEqual([first.body.id]);
    // the replayed secret is the key's own
    expect((await h.http.get('/v1/models').set('X-API-Key', retry.body.secret)).status).toBe(200);
    const stored = await storedBody(workspace.id, 'make-ci-key');
    expect(stored).toMatch(/^v1:/);
    expect(stored).not.toContain(first.body.secret);
    expect(stored).not.toContain(first.body.id);
    const other = await createKey(h.orm.em.fork(), workspace.id, { name: 'second admin', kind: 'admin', expiresAt: null });
    expectError(await send(other.secret), 422, 'IDEMPOTENCY_KEY_REUSED');
    // a key used for another body is refused too, and creates nothing
    expectError(await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).set('Idempotency-Key', 'make-ci-key').send({ name: 'other' }), 422, 'IDEMPOTENCY_KEY_REUSED');
    const after = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(after.body.pagination.total).toBe(listed.body.pagination.total + 1);
  });

  it('a retried rotation makes one twin and replays its secret; a retried refusal replays the refusal', async () => {
    const { adminKey, apiKey } = await h.provision('build');
    const keys = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const usage = keys.body.data.find((k: { kind: string }) => k.kind === 'api') as { id: string };
    const rotate = (id: string) => h.http.post(`/v1/api-keys/${id}/rotate`).set('X-API-Key', adminKey).set('Idempotency-Key', `rotate-${id}`).send({ grace_days: 1 });
    const first = await rotate(usage.id);
    const retry = await rotate(usage.id);
    expect([first.status, retry.status, retry.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
    expect(retry.body).toEqual(first.body);
    const after = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(after.body.pagination.total).toBe(keys.body.pagination.total + 1);
    expect((await h.http.get('/v1/models').set('X-API-Key', apiKey)).status).toBe(200);
    const unknown = await rotate('key_unknown');
    const unknownAgain = await rotate('key_unknown');
    expectError(unknown, 404, 'NOT_FOUND');
    expectError(unknownAgain, 404, 'NOT_FOUND');
    expect(unknownAgain.headers['idempotent-replayed']).toBe('true');
  });

  it('a retried webhook registration makes one webhook and replays its signing secret', async () => {
    const { adminKey } = await h.provision('build');
    const register = () => h.http.post('/v1/webhooks').set('X-API-Key', adminKey).set('Idempotency-Key', 'hook-once').send({ url: 'http://127.0.0.1:9/hook' });
    const first = await register();
    const retry = await register();
    expect([first.status, retry.status, retry.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
    expect(retry.body.secret).toBe(first.body.secret);
    const listed = await h.http.get('/v1/webhooks').set('X-API-Key', adminKey);
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([first.body.id]);
  });

  it('a retried workspace creation from a web session makes one workspace, whichever of its workspaces the retry acts on and however the path is written (the account\'s key)', async () => {
    const session = await signInByMail(h);
    const create = () => h.http.post('/v1/workspaces').set('Authorization', session.bearer).set('Idempotency-Key', 'ws-once').send({ name: 'Staging' });
    const first = await create();
    const retry = await create();
    expect([first.status, retry.status, retry.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
    expect(retry.body).toEqual(first.body);
    const listed = await h.http.get('/v1/workspaces').set('Authorization', session.bearer);
    expect(listed.body.data.filter((w: { name: string }) => w.name === 'Staging').map((w: { id: string }) => w.id)).toEqual([first.body.id]);
    // the account's key, whichever workspace the session acts on, and however the path is written (a twentieth probe made a second workspace from the other one, and got 422 for `/V1/WORKSPACES/`)
    // (the variants are not in the document, so they go around the harness's contract check)
    const unchecked = request(h.server);
    for (const [path, workspace] of [['/v1/workspaces', first.body.id], ['/V1/WORKSPACES/', first.body.id], ['/v1/workspaces/', '']] as const) {
      const again = await unchecked.post(path).set('Authorization', session.bearer).set('X-Workspace-Id', workspace || listed.body.data[0].id).set('Idempotency-Key', 'ws-once').send({ name: 'Staging' });
      expect([path, again.status, again.headers['idempotent-replayed'], again.body.id]).toEqual([path, 201, 'true', first.body.id]);
    }
    expect((await h.http.get('/v1/workspaces').set('Authorization', session.bearer)).body.pagination.total).toBe(listed.body.pagination.total);
  });
});
