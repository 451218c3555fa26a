import { expectError, signInByMail, startHarness, type Harness } from '../support/harness';

/** The spec's "Separation by route" table, for the routes that exist so far, and key states at the door. */
describe('API-key authentication', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('asks for credentials with 401 AUTH_REQUIRED when none are sent', async () => {
    expectError(await h.http.get('/v1/api-keys'), 401, 'AUTH_REQUIRED');
  });

  it('accepts X-API-Key and Authorization: Bearer as equivalent', async () => {
    const { adminKey } = await h.provision();
    const viaHeader = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const viaBearer = await h.http.get('/v1/api-keys').set('Authorization', `Bearer ${adminKey}`);
    expect(viaHeader.status).toBe(200);
    expect(viaBearer.status).toBe(200);
    expect(viaBearer.body.data.map((k: { id: string }) => k.id)).toEqual(viaHeader.body.data.map((k: { id: string }) => k.id));
  });

  it('refuses two different credentials with 400 AMBIGUOUS_CREDENTIALS (X-API-Key won silently over an invalid or another account\'s Bearer, noted by a sixth probe)', async () => {
    const a = await h.provision();
    const b = await h.provision();
    const session = await signInByMail(h);
    const unknown = 'sk-svc-api-00000000000000000000000000000000';
    for (const bearer of [unknown, b.apiKey, session.bearer.replace(/^Bearer /, ''), 'not-a-token']) {
      expectError(await h.http.get('/v1/models').set('X-API-Key', a.apiKey).set('Authorization', `Bearer ${bearer}`), 400, 'AMBIGUOUS_CREDENTIALS');
    }
    expectError(await h.http.get('/v1/models').set('X-API-Key', a.apiKey).set('Authorization', 'Basic eDp5'), 400, 'AMBIGUOUS_CREDENTIALS');
    // a paid call is refused before anything is charged
    expectError(await h.http.post('/v1/models/mdl_unknown000/predict').set('X-API-Key', a.apiKey).set('Authorization', `Bearer ${b.apiKey}`).send({ rows: [{ x: 1 }] }), 400, 'AMBIGUOUS_CREDENTIALS');
    // the same key in both forms is one credential, and a Bearer without a token (a tool's empty field) is none
    expect((await h.http.get('/v1/models').set('X-API-Key', a.apiKey).set('Authorization', `Bearer ${a.apiKey}`)).status).toBe(200);
    expect((await h.http.get('/v1/models').set('X-API-Key', a.apiKey).set('Authorization', 'Bearer ')).status).toBe(200);
    // and the document names the code among every authenticated route's 400s
    const doc = (await h.http.get('/openapi.json')).body as { paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, { description: string }> }>> };
    const authenticated = Object.values(doc.paths).flatMap((ops) => Object.values(ops)).filter((op) => (op.security ?? []).length > 0);
    expect(authenticated.length).toBeGreaterThan(40);
    for (const op of authenticated) expect(op.responses['400']?.description).toContain('AMBIGUOUS_CREDENTIALS');
  });

  it('refuses a credential header repeated with different values with 400 AMBIGUOUS_CREDENTIALS (Node kept the first Authorization field, so a second naming an unknown key or another account was ignored: a seventh probe)', async () => {
    const a = await h.provision();
    const b = await h.provision();
    const session = await signInByMail(h);
    const unknown = 'sk-svc-api-00000000000000000000000000000000';
    // superagent sends an array as one header field per value (its types allow arrays for Cookie only)
    const fields = (...values: string[]): string => values as unknown as string;
    for (const second of [unknown, b.apiKey, session.bearer.replace(/^Bearer /, '')]) {
      // was 200 as a's workspace
      expectError(await h.http.get('/v1/models').set('Authorization', fields(`Bearer ${a.apiKey}`, `Bearer ${second}`)), 400, 'AMBIGUOUS_CREDENTIALS');
      // was 401 API_KEY_INVALID (the two values joined by ", ")
      expectError(await h.http.get('/v1/models').set('X-API-Key', fields(a.apiKey, second)), 400, 'AMBIGUOUS_CREDENTIALS');
    }
    expectError(await h.http.get('/v1/auth/me').set('Authorization', fields(session.bearer, `Bearer ${unknown}`)), 400, 'AMBIGUOUS_CREDENTIALS');
    // a paid call is refused before anything is charged
    expectError(await h.http.post('/v1/models/mdl_unknown000/predict').set('Authorization', fields(`Bearer ${a.apiKey}`, `Bearer ${b.apiKey}`)).send({ rows: [{ x: 1 }] }), 400, 'AMBIGUOUS_CREDENTIALS');
    // one value sent twice is one credential
    expect((await h.http.get('/v1/models').set('Authorization', fields(`Bearer ${a.apiKey}`, `Bearer ${a.apiKey}`))).status).toBe(200);
    expect((await h.http.get('/v1/models').set('X-API-Key', fields(a.apiKey, a.apiKey))).status).toBe(200);
  });

  it.each([
    ['an unknown key of the current format', 'sk-svc-api-00000000000000000000000000000000'],
    ['an unknown admin-format key', 'sk-svc-admin-00000000000000000000000000000000'],
    ['a legacy ssk- key', 'ssk-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c'],
  ])('answers %s with 401 API_KEY_INVALID', async (_label, key) => {
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', key), 401, 'API_KEY_INVALID');
    expectError(await h.http.get('/v1/api-keys').set('Authorization', `Bearer ${key}`), 401, 'API_KEY_INVALID');
  });

  it('answers anything in X-API-Key that is not an API key (an upper-cased secret, a web session token) with 401 API_KEY_INVALID, never as a token', async () => {
    const { apiKey } = await h.provision('build');
    const session = await signInByMail(h);
    for (const value of [apiKey.toUpperCase(), session.bearer.replace(/^Bearer\s+/, ''), 'garbage']) {
      expectError(await h.http.get('/v1/models').set('X-API-Key', value), 401, 'API_KEY_INVALID');
    }
    expect((await h.http.get('/v1/models').set('X-API-Key', apiKey)).status).toBe(200);
  });

  it('answers a legacy ssk- key even on a public-looking path with 401 API_KEY_INVALID, not 403', async () => {
    const { adminKey } = await h.provision();
    const legacy = `ssk-${adminKey.slice('sk-svc-admin-'.length)}`;
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', legacy), 401, 'API_KEY_INVALID');
  });

  it('answers a usage key on /v1/api-keys with 403 ADMIN_KEY_REQUIRED', async () => {
    const { apiKey } = await h.provision();
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', apiKey), 403, 'ADMIN_KEY_REQUIRED');
    expectError(await h.http.post('/v1/api-keys').set('Authorization', `Bearer ${apiKey}`).send({ name: 'x' }), 403, 'ADMIN_KEY_REQUIRED');
  });

  it('answers a bearer token that is not an API key (an invalid or expired access token) with 401 TOKEN_INVALID', async () => {
    expectError(await h.http.get('/v1/api-keys').set('Authorization', 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl'), 401, 'TOKEN_INVALID');
  });

  it('refuses a revoked key with 401 API_KEY_INVALID', async () => {
    const { adminKey } = await h.provision();
    const created = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'to revoke', kind: 'api' });
    expect(created.status).toBe(201);
    expect((await h.http.delete(`/v1/api-keys/${created.body.id}`).set('X-API-Key', adminKey)).status).toBe(204);
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', created.body.secret), 401, 'API_KEY_INVALID');
  });

  it('stops a key at its expires_at at once, before any sweep marks it', async () => {
    const { adminKey } = await h.provision();
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = await h.http.post('/v1/api-keys').set('X-API-Key', adminKey).send({ name: 'short-lived', kind: 'api', expires_at: expiresAt });
    expect(created.status).toBe(201);
    expect(created.body.expires_at).toBe(expiresAt);
    // A usage key authenticates (403 on an admin route, not 401) while it is valid...
    expectError(await h.http.get('/v1/api-keys').set('X-API-Key', created.body.secret), 403, 'ADMIN_KEY_REQUIRED');
    await new Promise((resolve) => setTimeout(resolve, 1800));
    // ...and is refused the moment it expires.
    const res = await h.http.get('/v1/api-keys').set('X-API-Key', created.body.secret);
    expectError(res, 401, 'API_KEY_INVALID');
    expect(res.body.messageDetail).toMatch(/expired/);
    const listed = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    expect(listed.body.data.find((k: { id: string }) => k.id === created.body.id).status).toBe('expired');
  });

  it('records when a key was last used', async () => {
    const { adminKey } = await h.provision();
    const first = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const self = first.body.data.find((k: { kind: string }) => k.kind === 'admin');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const after = second.body.data.find((k: { id: string }) => k.id === self.id);
    expect(after.last_used_at).not.toBeNull();
  });
});
