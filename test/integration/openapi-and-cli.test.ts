import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AccountSchema, ApiKeySchema, WorkspaceSchema } from '../../db/entities';
import { TEST_ENV, repoRoot, requireEnv } from '../support/env';
import { churnRows } from '../support/datasets';
import { startHarness, type Harness } from '../support/harness';

const run = promisify(execFile);

describe('/openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('documents what remains in X-Service-Predictions-Remaining on the 402 CREDITS_EXHAUSTED of predict and forecast, as on their 200', async () => {
    const res = await h.http.get('/openapi.json');
    for (const [method, route] of [['post', '/v1/models/{id}/predict'], ['post', '/v1/forecast']] as const) {
      const responses = res.body.paths[route][method].responses;
      for (const status of ['200', '402']) {
        expect({ route, status, header: responses[status].headers?.['X-Service-Predictions-Remaining']?.schema }).toEqual({ route, status, header: { type: 'integer' } });
      }
    }
  });

  it('documents the Idempotency-Key header, its refusals and the replay header on the five routes the contract names and the writes we added it to (a seventh probe found no mention of it), and only there', async () => {
    const res = await h.http.get('/openapi.json');
    type Operation = { parameters?: Array<{ in: string; name: string; schema: { pattern?: string } }>; responses: Record<string, { description: string; headers?: Record<string, unknown> }> };
    const paths = res.body.paths as Record<string, Record<string, Operation>>;
    const accepting = [
      ...[['post', '/v1/models'], ['post', '/v1/models/{id}/predict'], ['post', '/v1/models/{id}/outcomes'], ['post', '/v1/models/{id}/refresh'], ['post', '/v1/forecast']],
      ...[['post', '/v1/workspaces'], ['post', '/v1/api-keys'], ['post', '/v1/api-keys/{keyId}/rotate'], ['post', '/v1/webhooks'], ['post', '/v1/webhooks/{id}/rotate-secret']],
      ...[['post', '/v1/webhooks/{id}/test'], ['post', '/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver'], ['post', '/v1/billing/checkout'], ['post', '/v1/billing/credits'], ['post', '/v1/billing/portal']],
    ] as const;
    for (const [method, route] of accepting) {
      const op = paths[route]![method]!;
      const header = (op.parameters ?? []).find((p) => p.in === 'header' && p.name === 'idempotency-key');
      expect({ route, header: header?.schema.pattern }).toEqual({ route, header: expect.any(String) });
      expect({ route, codes: [op.responses['409']?.description, op.responses['422']?.description, op.responses['503']?.description] }).toEqual({
        route,
        codes: [expect.stringContaining('REQUEST_IN_PROGRESS'), expect.stringContaining('IDEMPOTENCY_KEY_REUSED'), expect.stringContaining('CALL_EXPIRED')],
      });
      const success = Object.keys(op.responses).find((status) => status.startsWith('2'))!;
      expect({ route, replayed: op.responses[success]!.headers?.['Idempotent-Replayed'] }).toEqual({ route, replayed: expect.anything() });
    }
    const others = Object.entries(paths).flatMap(([route, ops]) => Object.entries(ops).filter(([method]) => !accepting.some(([m, r]) => m === method && r === route)).map(([, op]) => op));
    expect(others.length).toBeGreaterThan(40);
    for (const op of others) expect((op.parameters ?? []).some((p) => p.name === 'idempotency-key')).toBe(false);
    // the header's schema is the one the server applies
    const { apiKey } = await h.provision('build');
    const refused = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).set('Idempotency-Key', 'k'.repeat(256)).send({ target: 'y', data: [] });
    expect([refused.status, refused.body.message]).toEqual([400, 'VALIDATION_ERROR']);
    const pattern = new RegExp(paths['/v1/forecast']!.post!.parameters!.find((p) => p.name === 'idempotency-key')!.schema.pattern!);
    expect([pattern.test('k'.repeat(255)), pattern.test('k'.repeat(256)), pattern.test('a b'), pattern.test('')]).toEqual([true, false, false, false]);
  });

  it('documents the multipart form (a file of rows, the other fields as text) on every route the contract lets take one; a sixth probe found only JSON', async () => {
    const res = await h.http.get('/openapi.json');
    const forms: Record<string, { schema: { properties: Record<string, { type?: string; format?: string }>; required?: string[] } }> = {};
    for (const [method, route] of [['post', '/v1/models'], ['post', '/v1/datasets/validate'], ['post', '/v1/models/{id}/predict'], ['post', '/v1/forecast'], ['post', '/v1/forecast/backtest']] as const) {
      const content = res.body.paths[route][method].requestBody.content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'multipart/form-data']);
      forms[route] = content['multipart/form-data'];
      expect(forms[route]!.schema.properties.file).toEqual(expect.objectContaining({ type: 'string', format: 'binary' }));
    }
    // a list is one text field (JSON, or comma-separated numbers), as the server reads it; numbers stay typed
    expect(forms['/v1/forecast']!.schema.properties.quantiles).toEqual(expect.objectContaining({ type: 'string' }));
    expect(forms['/v1/forecast']!.schema.properties.data).toEqual(expect.objectContaining({ type: 'string' }));
    expect(forms['/v1/forecast']!.schema.properties.horizon).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, maximum: 1000 }));
    expect(forms['/v1/forecast']!.schema.required).toEqual(['target']);
    expect(forms['/v1/models/{id}/predict']!.schema.properties.rows).toEqual(expect.objectContaining({ type: 'string' }));
    // other routes keep their JSON body alone
    expect(Object.keys(res.body.paths['/v1/webhooks'].post.requestBody.content)).toEqual(['application/json']);

    // what the document describes is what the server takes
    const { apiKey } = await h.provision('build');
    const csv = ['t,y', ...Array.from({ length: 20 }, (_, i) => `2026-01-${String(i + 1).padStart(2, '0')},${10 + (i % 7)}`)].join('\n');
    const form = await h.http.post('/v1/forecast').set('X-API-Key', apiKey).field('target', 'y').field('horizon', '2').field('quantiles', '[0.1,0.9]').attach('file', Buffer.from(csv), 'series.csv');
    expect(form.status).toBe(200);
    expect(form.text.trim().split('\n')[0]).toBe('t,y_prediction,quantile_0.1,quantile_0.9');
  });

  it('documents the codes these routes answer where it named fewer: API_KEY_INVALID on the account routes (the contract: an unknown key, anywhere), SCHEMA_MISMATCH on outcomes (a nineteenth probe)', async () => {
    const doc = (await h.http.get('/openapi.json')).body;
    const { apiKey, workspace } = await h.provision('build');
    await h.orm.em.getConnection().execute(`update api_keys set revoked_at = now() where workspace_id = ? and kind = 'api'`, [workspace.id]);
    for (const [method, path] of [['get', '/v1/auth/me'], ['patch', '/v1/auth/me'], ['delete', '/v1/auth/me'], ['get', '/v1/workspaces'], ['post', '/v1/workspaces'], ['get', '/v1/workspaces/{workspaceId}'], ['patch', '/v1/workspaces/{workspaceId}'], ['post', '/v1/auth/oauth/{provider}/link']] as const) {
      expect(`${method} ${path}: ${doc.paths[path][method].responses['401'].description}`).toContain('API_KEY_INVALID');
    }
    for (const key of [apiKey, 'sk-svc-api-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const refused = await h.http.get('/v1/auth/me').set('X-API-Key', key);
      expect([refused.status, refused.body.message]).toEqual([401, 'API_KEY_INVALID']);
    }

    expect(doc.paths['/v1/models/{id}/outcomes'].post.responses['400'].description).toContain('SCHEMA_MISMATCH');
    const fresh = await h.provision('build');
    const model = await h.http.post('/v1/models').set('X-API-Key', fresh.apiKey).send({ target: 'churned', engine: 'tabular-gbdt', data: churnRows(40) });
    const outcome = await h.http
      .post(`/v1/models/${model.body.id}/outcomes`)
      .set('X-API-Key', fresh.apiKey)
      .send({ outcomes: [{ actual: 'yes', features: { x1: 'not a number', x2: 1, colour: 'red' } }] });
    expect([outcome.status, outcome.body.message]).toEqual([400, 'SCHEMA_MISMATCH']);
  });

  it('documents every route of the contract this build serves, with the contract\'s statuses and error codes', async () => {
    const res = await h.http.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    // Written from ../shared/spec/service-interface.md, not from the app's own route table, so that a
    // route dropped from the app or a code missing from its documentation fails here.
    const contract: Array<[method: string, path: string, statuses: Record<string, string[]>]> = [
      ['get', '/health', { '200': [] }],
      ['get', '/v1/engines', { '200': [], '503': ['ENGINE_CATALOGUE_MISMATCH'] }],
      ['get', '/v1/models', { '200': [], '401': ['AUTH_REQUIRED', 'API_KEY_INVALID', 'TOKEN_INVALID'] }],
      ['post', '/v1/models', { '201': [], '402': ['QUOTA_MODELS_EXCEEDED'], '413': ['TOO_MANY_ROWS', 'DATASET_TOO_LARGE', 'FILE_TOO_LARGE'], '422': ['DATA_VALIDATION_FAILED', 'IDEMPOTENCY_KEY_REUSED'] }],
      ['get', '/v1/models/{id}', { '200': [], '404': ['NOT_FOUND'] }],
      ['patch', '/v1/models/{id}', { '200': [], '409': ['MODEL_FIELD_FROZEN'] }],
      ['delete', '/v1/models/{id}', { '204': [] }],
      ['post', '/v1/models/{id}/archive', { '204': [], '404': ['NOT_FOUND'] }],
      ['post', '/v1/models/{id}/restore', { '200': [], '402': ['QUOTA_MODELS_EXCEEDED'], '409': ['MODEL_DELETED'] }],
      ['get', '/v1/models/{id}/versions', { '200': [] }],
      ['post', '/v1/models/{id}/predict', { '200': [], '400': ['COLUMN_MISMATCH', 'SCHEMA_MISMATCH'], '402': ['CREDITS_EXHAUSTED'], '403': ['ADMIN_KEY_CANNOT_PREDICT'], '409': ['MODEL_ARCHIVED', 'ENGINE_MISMATCH', 'REQUEST_IN_PROGRESS'], '413': ['TOO_MANY_ROWS'] }],
      ['get', '/v1/models/{id}/predictions', { '200': [], '503': ['PREDICTION_HISTORY_UNAVAILABLE'] }],
      ['post', '/v1/models/{id}/outcomes', { '201': [], '404': ['NOT_FOUND'] }],
      ['post', '/v1/models/{id}/refresh', { '201': [], '409': ['NO_PENDING_OUTCOMES', 'UPDATE_IN_PROGRESS'] }],
      ['get', '/v1/models/{id}/performance', { '200': [], '503': ['PERFORMANCE_UNAVAILABLE'] }],
      ['post', '/v1/forecast', { '200': [], '400': ['INVALID_INPUT'], '402': ['CREDITS_EXHAUSTED'], '422': ['FORECAST_FAILED'] }],
      ['post', '/v1/forecast/backtest', { '200': [], '400': ['VALIDATION_ERROR'] }],
      ['post', '/v1/datasets/validate', { '200': [], '400': ['CSV_UNREADABLE'] }],
      ['get', '/v1/api-keys', { '200': [], '403': ['ADMIN_KEY_REQUIRED'] }],
      ['post', '/v1/api-keys', { '201': [] }],
      ['delete', '/v1/api-keys/{keyId}', { '204': [], '404': ['NOT_FOUND'] }],
      ['post', '/v1/api-keys/{keyId}/rotate', { '201': [], '404': ['NOT_FOUND'], '409': ['KEY_NOT_ACTIVE'] }],
      ['get', '/v1/requests', { '200': [], '503': ['REQUEST_LOG_UNAVAILABLE'] }],
      ['get', '/v1/usage', { '200': [], '503': ['USAGE_UNAVAILABLE'] }],
      ['get', '/openapi.json', { '200': [] }],
      ['post', '/v1/auth/login', { '200': [] }],
      ['post', '/v1/auth/magic-link/request', { '200': [] }],
      ['post', '/v1/auth/magic-link/verify', { '200': [], '400': [], '403': ['STAFF_LOGIN_REQUIRED'] }],
      ['post', '/v1/auth/login/password', { '202': [], '401': ['STAFF_LOGIN_INVALID'] }],
      ['post', '/v1/auth/login/verify', { '200': [], '400': ['OTP_INVALID', 'OTP_TOO_MANY_ATTEMPTS'], '401': ['STAFF_LOGIN_INVALID'] }],
      ['post', '/v1/auth/refresh', { '200': [], '401': [] }],
      ['post', '/v1/auth/logout', { '204': [] }],
      ['get', '/v1/auth/me', { '200': [], '401': ['AUTH_REQUIRED', 'TOKEN_INVALID'] }],
      ['patch', '/v1/auth/me', { '200': [] }],
      ['delete', '/v1/auth/me', { '204': [], '400': [] }],
      ['get', '/v1/geoip', { '200': [], '422': ['PRIVATE_IP'], '503': [] }],
      ['get', '/v1/workspaces', { '200': [] }],
      ['post', '/v1/workspaces', { '201': [] }],
      ['get', '/v1/workspaces/{workspaceId}', { '200': [] }],
      ['patch', '/v1/workspaces/{workspaceId}', { '200': [] }],
    ];
    for (const [method, path, statuses] of contract) {
      const operation = res.body.paths[path]?.[method];
      expect({ route: `${method} ${path}`, documented: Boolean(operation) }).toEqual({ route: `${method} ${path}`, documented: true });
      for (const [status, codes] of Object.entries(statuses)) {
        expect({ route: `${method} ${path}`, status, documented: Boolean(operation.responses[status]) }).toEqual({ route: `${method} ${path}`, status, documented: true });
        for (const code of codes) expect(`${method} ${path} ${status}: ${operation.responses[status].description}`).toContain(code);
      }
    }
    // Every list of the contract documents its pagination object.
    for (const path of ['/v1/models', '/v1/api-keys', '/v1/models/{id}/versions', '/v1/models/{id}/predictions', '/v1/requests']) {
      const ok = res.body.paths[path].get.responses['200'].content['application/json'].schema;
      const schema = ok.$ref ? res.body.components.schemas[ok.$ref.split('/').pop()] : ok;
      expect({ path, required: schema.required }).toEqual({ path, required: expect.arrayContaining(['data', 'pagination']) });
    }
    expect(res.body.paths['/openapi.json'].get).toBeDefined();

    const rotate = res.body.paths['/v1/api-keys/{keyId}/rotate'].post;
    expect(rotate.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(['path:keyId', 'header:idempotency-key', 'header:x-workspace-id']);
    expect(rotate.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/RotateApiKey');
    expect(rotate.responses['409'].description).toContain('KEY_NOT_ACTIVE');
    expect(rotate.responses['403'].description).toContain('ADMIN_KEY_REQUIRED');
    const list = res.body.paths['/v1/api-keys'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['limit', 'offset', 'x-workspace-id']);
    // The bearer scheme names both identities; account routes take only the web session's token.
    expect(res.body.components.securitySchemes.BearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(res.body.paths['/v1/auth/me'].get.security).toEqual([{ BearerAuth: [] }]);
    expect(res.body.components.schemas.RotateApiKey.properties.grace_days).toEqual(expect.objectContaining({ type: 'integer', default: 7, minimum: 0 }));
    expect(res.body.components.schemas.Error.required).toEqual(expect.arrayContaining(['status', 'message', 'messageDetail']));
  });
});

describe('operator CLI', () => {
  it('create-account prints the account, its workspace and a working admin and usage key, once', async () => {
    const email = `cli-${Date.now()}@Example.test`;
    const { stdout } = await run(
      path.join(repoRoot, 'node_modules', '.bin', 'tsx'),
      [path.join(repoRoot, 'scripts', 'admin.ts'), 'create-account', '--email', email, '--plan', 'build'],
      { env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) }, cwd: repoRoot },
    );
    const out = JSON.parse(stdout);
    expect(out).toEqual({
      account_id: expect.stringMatching(/^acc_/),
      workspace_id: expect.stringMatching(/^ws_/),
      plan: 'build',
      admin_key: expect.stringMatching(/^sk-svc-admin-/),
      api_key: expect.stringMatching(/^sk-svc-api-/),
    });

    const h = await startHarness();
    try {
      const em = h.orm.em.fork();
      const account = await em.findOneOrFail(AccountSchema, { id: out.account_id });
      expect(account).toEqual(expect.objectContaining({ email: email.toLowerCase(), plan: 'build' }));
      expect(await em.count(WorkspaceSchema, { account: out.account_id })).toBe(1);
      expect(await em.count(ApiKeySchema, { workspace: out.workspace_id })).toBe(2);
      const listed = await h.http.get('/v1/api-keys').set('X-API-Key', out.admin_key);
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((k: { kind: string }) => k.kind).sort()).toEqual(['admin', 'api']);
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', out.api_key)).status).toBe(403);
    } finally {
      await h.stop();
    }

    // The same address twice is refused, and nothing new is created.
    await expect(
      run(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [path.join(repoRoot, 'scripts', 'admin.ts'), 'create-account', '--email', email], {
        env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) },
        cwd: repoRoot,
      }),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('ACCOUNT_EXISTS') });
  });
});

describe('a rotation whose twin secret nobody saw has a way out', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.stop());

  it('during the grace, the old key rotates the unseen twin at once and the new twin works', async () => {
    const { adminKey } = await h.provision('build');
    const listed = await h.http.get('/v1/api-keys').set('X-API-Key', adminKey);
    const adminId = listed.body.data.find((k: { kind: string }) => k.kind === 'admin').id as string;
    // The rotation commits, but its answer (the twin's secret) is lost on the way.
    const lost = await h.http.post(`/v1/api-keys/${adminId}/rotate`).set('X-API-Key', adminKey).send({});
    expect(lost.status).toBe(201);
    try {
      const twinId = lost.body.id as string;
      const again = await h.http.post(`/v1/api-keys/${twinId}/rotate`).set('X-API-Key', adminKey).send({ grace_days: 0 });
      expect(again.status).toBe(201);
      expect((await h.http.get('/v1/api-keys').set('X-API-Key', again.body.secret)).status).toBe(200);
      const keys = (await h.http.get('/v1/api-keys').set('X-API-Key', again.body.secret)).body.data as Array<{ id: string; status: string }>;
      expect(keys.find((k) => k.id === twinId)?.status).toBe('revoked');
    } finally {
      await h.client.workflow.getHandle(`key-grace/${adminId}`).terminate('test cleanup').catch(() => undefined);
    }
  });

  it('after a grace of 0 on the last admin key, the operator CLI issues a new admin key for the workspace', async () => {
    const { adminKey, workspace } = await h.provision('build');
    const adminId = (await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).body.data.find((k: { kind: string }) => k.kind === 'admin').id as string;
    expect((await h.http.post(`/v1/api-keys/${adminId}/rotate`).set('X-API-Key', adminKey).send({ grace_days: 0 })).status).toBe(201);
    expect((await h.http.get('/v1/api-keys').set('X-API-Key', adminKey)).status).toBe(401);
    const { stdout } = await run(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [path.join(repoRoot, 'scripts', 'admin.ts'), 'create-key', '--workspace', workspace.id], {
      env: { ...process.env, DATABASE_URL: requireEnv(TEST_ENV.databaseUrl) },
      cwd: repoRoot,
    });
    const out = JSON.parse(stdout);
    expect(out).toEqual({ key_id: expect.stringMatching(/^key_/), workspace_id: workspace.id, kind: 'admin', key: expect.stringMatching(/^sk-svc-admin-/) });
    expect((await h.http.get('/v1/api-keys').set('X-API-Key', out.key)).status).toBe(200);
  });
});
