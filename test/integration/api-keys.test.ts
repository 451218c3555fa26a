import { MAX_API_KEYS_PER_WORKSPACE } from '../../config/plans';
import { ApiKeySchema } from '../../db/entities';
import { createKey } from '../../services/api-keys';
import { expectError, signInByMail, startHarness, type Harness } from '../support/harness';

const DAY_MS = 86_400_000;

describe('API keys routes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  describe('list', () => {
    it('pages with limit (default 50, at most 200) and offset, newest first, with a pagination object', async () => {
      const { adminKey } = await h.provision();
      for (let i = 0; i < 3; i += 1) {
        expect((await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: `k${i}` })).status).toBe(201);
      }
      const all = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
      expect(all.status).toBe(200);
      expect(all.body.pagination).toEqual({ total: 5, limit: 50, offset: 0, has_more: false });
      expect(all.body.data.map((k: { name: string }) => k.name).slice(0, 3)).toEqual(['k2', 'k1', 'k0']);

      const page = await h.http.get('/v1/api-keys?limit=2&offset=2').set('X-API-Key', adminKey);
      expect(page.body.pagination).toEqual({ total: 5, limit: 2, offset: 2, has_more: true });
      expect(page.body.data.map((k: { id: string }) => k.id)).toEqual(all.body.data.slice(2, 4).map((k: { id: string }) => k.id));

      expectError(await h.http.get('/v1/api-keys?limit=201').set('X-API-Key', adminKey), 400, 'VALIDATION_ERROR');
      expectError(await h.http.get('/v1/api-keys?offset=-1').set('X-API-Key', adminKey), 400, 'VALIDATION_ERROR');
      expect((await h.http.get('/v1/api-keys?limit=200').set('X-API-Key', adminKey)).status).toBe(200);
    });

    it('shows only the caller’s workspace', async () => {
      const a = await h.provision();
      const b = await h.provision();
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', a.adminKey);
      expect(listed.body.data.every((k: { workspace_id: string }) => k.workspace_id === a.workspace.id)).toBe(true);
      expect(listed.body.data.some((k: { workspace_id: string }) => k.workspace_id === b.workspace.id)).toBe(false);
    });
  });

  describe('create', () => {
    it('creates a usage key with an admin key and returns its secret once', async () => {
      const { adminKey } = await h.provision();
      const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'ci' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual(expect.objectContaining({ name: 'ci', kind: 'api', status: 'active', expires_at: null }));
      expect(res.body.id).toMatch(/^key_/);
      expect(res.body.secret).toMatch(/^sk-svc-api-[0-9A-Za-z]{32}$/);
      expect(res.body.display_prefix).toBe(res.body.secret.slice(0, 'sk-svc-api-'.length + 4));
      expect(res.body.last_four).toBe(res.body.secret.slice(-4));

      const row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: res.body.id });
      expect(row.secretHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.toContain(res.body.secret);
    });

    it('refuses to create an admin key for a key caller (admin keys come from a web session) and creates nothing', async () => {
      const { adminKey } = await h.provision();
      const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'root', kind: 'admin' });
      expectError(res, 403, 'WEB_SESSION_REQUIRED');
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
      expect(listed.body.data.filter((k: { kind: string }) => k.kind === 'admin')).toHaveLength(1);
    });

    it(`holds a workspace to ${MAX_API_KEYS_PER_WORKSPACE} live keys: of three concurrent creations with room for one, one is 201 and two are 409 TOO_MANY_API_KEYS; revoked and expired keys do not count`, async () => {
      const { adminKey, workspace } = await h.provision();
      const em = h.orm.em.fork();
      // Revoked and expired keys are kept for audit but are not live.
      const revoked = await createKey(em, workspace.id, { name: 'revoked', kind: 'api', expiresAt: null });
      await em.nativeUpdate(ApiKeySchema, { id: revoked.key.id }, { revokedAt: new Date(), revokeReason: 'deleted' });
      const expired = await createKey(em, workspace.id, { name: 'expired', kind: 'api', expiresAt: new Date(Date.now() + 60_000) });
      await em.nativeUpdate(ApiKeySchema, { id: expired.key.id }, { expiresAt: new Date(Date.now() - 1000) });
      // The provisioned admin and usage keys, and live ones up to one below the limit.
      for (let i = 2; i < MAX_API_KEYS_PER_WORKSPACE - 1; i += 1) await createKey(em, workspace.id, { name: `bulk${i}`, kind: 'api', expiresAt: null });
      const answers = await Promise.all([0, 1, 2].map((i) => h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: `race${i}` })));
      expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      for (const refused of answers.filter((r) => r.status === 409)) expectError(refused, 409, 'TOO_MANY_API_KEYS');
      const live = () => h.orm.em.fork().count(ApiKeySchema, { workspace: workspace.id, revokedAt: null, name: { $ne: 'expired' } });
      expect(await live()).toBe(MAX_API_KEYS_PER_WORKSPACE);
      const victim = answers.find((r) => r.status === 201)!.body.id as string;
      expect((await h.http.delete(`/v1/api-keys/${victim}`).set('X-API-Key', adminKey)).status).toBe(204);
      expect((await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'after' })).status).toBe(201);
    });

    it(`counts a rotation with a grace as one more live key: at ${MAX_API_KEYS_PER_WORKSPACE} live keys it is 409 TOO_MANY_API_KEYS and changes nothing, and grace_days 0 still rotates (an eighth probe chained 120 rotations with 90 days of grace to hold 123 live keys)`, async () => {
      const { adminKey, apiKey, workspace } = await h.provision();
      const em = h.orm.em.fork();
      const usage = await em.findOneOrFail(ApiKeySchema, { workspace: workspace.id, kind: 'api' });
      // the chain below the limit: each twin rotated again with a grace, the old ones still working
      let id = usage.id;
      for (let i = 0; i < 3; i += 1) {
        const rotated = await h.http.post(`/v1/api-keys/${id}/rotate`).set('X-API-Key', adminKey).send({ grace_days: 90 });
        expect(rotated.status).toBe(201);
        id = rotated.body.id as string;
      }
      expect((await h.http.get('/v1/models').set('X-API-Key', apiKey)).status).toBe(200);
      const live = () => h.orm.em.fork().count(ApiKeySchema, { workspace: workspace.id, revokedAt: null });
      for (let i = await live(); i < MAX_API_KEYS_PER_WORKSPACE; i += 1) await createKey(em, workspace.id, { name: `bulk${i}`, kind: 'api', expiresAt: null });
      expect(await live()).toBe(MAX_API_KEYS_PER_WORKSPACE);
      const refused = await h.http.post(`/v1/api-keys/${id}/rotate`).set('X-API-Key', adminKey).send({ grace_days: 7 });
      expectError(refused, 409, 'TOO_MANY_API_KEYS');
      expect(refused.body.messageDetail).toContain('grace_days 0');
      expect((await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id })).rotatedAt).toBeNull();
      expect(await live()).toBe(MAX_API_KEYS_PER_WORKSPACE);
      // without a grace the twin replaces the key: allowed at the limit, still 100 live keys
      const replaced = await h.http.post(`/v1/api-keys/${id}/rotate`).set('X-API-Key', adminKey).send({ grace_days: 0 });
      expect(replaced.status).toBe(201);
      expect(await live()).toBe(MAX_API_KEYS_PER_WORKSPACE);
    });

    it('refuses an expires_at in the past', async () => {
      const { adminKey } = await h.provision();
      const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'old', expires_at: '2020-01-01T00:00:00Z' });
      expectError(res, 400, 'VALIDATION_ERROR');
    });

    it('refuses an expires_at beyond the year 9999 in UTC and creates nothing (a sixth probe got 500 from an offset carrying it into year 10000)', async () => {
      const { adminKey } = await h.provision();
      const before = (await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).body.pagination.total as number;
      const res = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'far', expires_at: '9999-12-31T23:00:00-05:00' });
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.errors).toEqual([{ path: 'body.expires_at', message: 'it must fall within the years 0001 to 9999 in UTC.' }]);
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).body.pagination.total).toBe(before);
      // the last millisecond of the year 9999 is a date a key can expire at
      const last = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'far', expires_at: '9999-12-31T23:59:59.999Z' });
      expect(last.status).toBe(201);
      expect(last.body.expires_at).toBe('9999-12-31T23:59:59.999Z');
    });

    it('never shows a secret again: not in listings, not in log lines', async () => {
      const account = await h.provision();
      const created = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'secret-check' });
      const rotated = await h.http.post(`/v1/api-keys/${created.body.id}/rotate`).set('X-API-Key', account.adminKey).send({});
      const listed = await h.http.get('/v1/api-keys').set('Authorization', `Bearer ${account.adminKey}`);
      await h.http.get('/v1/api-keys').set('X-API-Key', 'sk-svc-api-thisisnotarealkeybutlookslikeone0');
      const secrets = [account.adminKey, account.apiKey, created.body.secret, rotated.body.secret];
      const listing = JSON.stringify(listed.body);
      const logs = h.logLines.join('\n');
      for (const secret of secrets) {
        expect(listing).not.toContain(secret);
        expect(logs).not.toContain(secret);
      }
      expect(listed.body.data.every((k: Record<string, unknown>) => !('secret' in k))).toBe(true);
    });
  });

  describe('delete', () => {
    it('revokes the key (204) and the key stops working; the listing shows it revoked', async () => {
      const { adminKey } = await h.provision();
      const created = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'temp' });
      const res = await h.http.delete(`/v1/api-keys/${created.body.id}`).set('X-API-Key', adminKey);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectError(await h.http.get('/v1/api-keys').set('X-API-Key', created.body.secret), 401, 'API_KEY_INVALID');
      const row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: created.body.id });
      expect(row.revokedAt).toBeInstanceOf(Date);
      expect(row.revokeReason).toBe('deleted');
    });

    it('answers 404 for an unknown key and for another workspace’s key, which stays untouched', async () => {
      const a = await h.provision();
      const b = await h.provision();
      const theirs = await h.http.post('/v1/api-keys').set('X-API-Key', b.adminKey).send({ name: 'theirs' });
      expectError(await h.http.delete('/v1/api-keys/key_doesnotexist0000000000').set('X-API-Key', a.adminKey), 404, 'NOT_FOUND');
      expectError(await h.http.delete(`/v1/api-keys/${theirs.body.id}`).set('X-API-Key', a.adminKey), 404, 'NOT_FOUND');
      expectError(await h.http.post(`/v1/api-keys/${theirs.body.id}/rotate`).set('X-API-Key', a.adminKey).send({}), 404, 'NOT_FOUND');
      const row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: theirs.body.id });
      expect(row.revokedAt).toBeNull();
      expect(row.rotatedAt).toBeNull();
    });
  });

  describe('rotate', () => {
    it('with grace_days omitted: twin of the same kind, old key ending 7 days out, both keys work', async () => {
      const account = await h.provision();
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
      const usage = listed.body.data.find((k: { kind: string }) => k.kind === 'api');
      const before = Date.now();
      const res = await h.http.post(`/v1/api-keys/${usage.id}/rotate`).set('X-API-Key', account.adminKey);
      expect(res.status).toBe(201);
      expect(res.body.kind).toBe('api');
      expect(res.body.secret).toMatch(/^sk-svc-api-/);
      expect(res.body.rotated_from).toBe(usage.id);
      expect(res.body.rotated_key.status).toBe('ending');
      const endsAt = Date.parse(res.body.rotated_key.ends_at);
      expect(endsAt - before).toBeGreaterThanOrEqual(7 * DAY_MS - 1000);
      expect(endsAt - before).toBeLessThanOrEqual(7 * DAY_MS + 5000);

      // Both authenticate (a usage key on an admin route is 403, not 401).
      expectError(await h.http.get('/v1/api-keys').set('X-API-Key', account.apiKey), 403, 'ADMIN_KEY_REQUIRED');
      expectError(await h.http.get('/v1/api-keys').set('X-API-Key', res.body.secret), 403, 'ADMIN_KEY_REQUIRED');

      const handle = h.client.workflow.getHandle(`key-grace/${usage.id}`);
      const description = await handle.describe();
      expect(description.status.name).toBe('RUNNING');
      expect(description.type).toBe('keyGraceExpiry');
      await handle.terminate('test cleanup');
    });

    it('an administration key rotates itself and the twin of its own rotation but no other administration key, nor the twin its owner made from a web session (403 WEB_SESSION_REQUIRED, nothing changed); a web session rotates any, its admin twin working at once (a twentieth probe: another admin key took the owner\'s over with grace_days 0)', async () => {
      const account = await h.provision();
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
      const admin = listed.body.data.find((k: { kind: string }) => k.kind === 'admin');
      const other = await createKey(h.orm.em.fork(), account.workspace.id, { name: 'second admin', kind: 'admin', expiresAt: null });
      const before = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
      for (const grace_days of [0, 90]) {
        expectError(await h.http.post(`/v1/api-keys/${admin.id}/rotate`).set('X-API-Key', other.secret).send({ grace_days }), 403, 'WEB_SESSION_REQUIRED');
      }
      const after = await h.http.get('/v1/api-keys').set('X-API-Key', account.adminKey);
      const unused = (keys: Array<Record<string, unknown>>) => keys.map(({ last_used_at: _used, ...k }) => k);
      expect(unused(after.body.data)).toEqual(unused(before.body.data));
      // a usage key is still rotated by an administration key, and the second admin key rotates itself, then its own twin
      const usage = listed.body.data.find((k: { kind: string }) => k.kind === 'api');
      expect((await h.http.post(`/v1/api-keys/${usage.id}/rotate`).set('X-API-Key', other.secret).send({ grace_days: 0 })).status).toBe(201);
      const selfRotated = await h.http.post(`/v1/api-keys/${other.key.id}/rotate`).set('X-API-Key', other.secret).send({ grace_days: 1 });
      expect(selfRotated.status).toBe(201);
      expect((await h.http.post(`/v1/api-keys/${selfRotated.body.id}/rotate`).set('X-API-Key', other.secret).send({ grace_days: 0 })).status).toBe(201);
      await h.client.workflow.getHandle(`key-grace/${other.key.id}`).terminate('test cleanup');
      const session = await signInByMail(h, account.account.email);
      const res = await h.http.post(`/v1/api-keys/${admin.id}/rotate`).set('Authorization', session.bearer).send({ grace_days: 1 });
      expect(res.status).toBe(201);
      expect(res.body.kind).toBe('admin');
      expect(res.body.secret).toMatch(/^sk-svc-admin-/);
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', res.body.secret)).status).toBe(200);
      // the old key, still in its grace, cannot take over the twin its owner made from the session (a twenty-second probe)
      expectError(await h.http.post(`/v1/api-keys/${res.body.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: 0 }), 403, 'WEB_SESSION_REQUIRED');
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', res.body.secret)).status).toBe(200);
      await h.client.workflow.getHandle(`key-grace/${admin.id}`).terminate('test cleanup');
    });

    it('with grace_days 0: the old key is revoked at once and no timer is started', async () => {
      const account = await h.provision();
      const created = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'now' });
      const res = await h.http.post(`/v1/api-keys/${created.body.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: 0 });
      expect(res.status).toBe(201);
      expect(res.body.rotated_key.status).toBe('revoked');
      expectError(await h.http.get('/v1/api-keys').set('X-API-Key', created.body.secret), 401, 'API_KEY_INVALID');
      expectError(await h.http.get('/v1/api-keys').set('X-API-Key', res.body.secret), 403, 'ADMIN_KEY_REQUIRED');
      await expect(h.client.workflow.getHandle(`key-grace/${created.body.id}`).describe()).rejects.toThrow();
    });

    it('answers 409 when rotating an ending or a revoked key, and changes nothing', async () => {
      const account = await h.provision();
      const ending = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'ending' });
      const first = await h.http.post(`/v1/api-keys/${ending.body.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: 2 });
      expect(first.status).toBe(201);
      expectError(await h.http.post(`/v1/api-keys/${ending.body.id}/rotate`).set('X-API-Key', account.adminKey).send({}), 409, 'KEY_NOT_ACTIVE');

      const revoked = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'revoked' });
      await h.http.delete(`/v1/api-keys/${revoked.body.id}`).set('X-API-Key', account.adminKey);
      expectError(await h.http.post(`/v1/api-keys/${revoked.body.id}/rotate`).set('X-API-Key', account.adminKey).send({}), 409, 'KEY_NOT_ACTIVE');

      const count = await h.orm.em.fork().count(ApiKeySchema, { workspace: account.workspace.id });
      expect(count).toBe(2 + 2 + 1); // initial pair, ending + its twin, revoked
      await h.client.workflow.getHandle(`key-grace/${ending.body.id}`).terminate('test cleanup');
    });

    it('two concurrent rotations of one key make one twin and one 409', async () => {
      const account = await h.provision();
      const key = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'race' });
      const results = await Promise.all(
        [0, 1, 2].map(() => h.http.post(`/v1/api-keys/${key.body.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: 0 })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      expect(await h.orm.em.fork().count(ApiKeySchema, { rotatedFrom: key.body.id })).toBe(1);
    });

    it('validates grace_days as a non-negative integer', async () => {
      const account = await h.provision();
      const key = await h.http.post('/v1/api-keys').set('X-API-Key', account.adminKey).send({ name: 'v' });
      for (const grace of [-1, 1.5, '3', 1000]) {
        expectError(await h.http.post(`/v1/api-keys/${key.body.id}/rotate`).set('X-API-Key', account.adminKey).send({ grace_days: grace }), 400, 'VALIDATION_ERROR');
      }
      const row = await h.orm.em.fork().findOneOrFail(ApiKeySchema, { id: key.body.id });
      expect(row.rotatedAt).toBeNull();
    });
  });
});
